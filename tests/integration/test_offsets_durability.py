"""Committed offsets survive coordinator faults: no acknowledged commit is lost or goes backwards.

One 3-broker cluster for the module (real ZooKeeper, real broker processes)
with the durable settings as *broker* settings, so that the internal topic
``__consumer_offsets`` (created by the brokers with the cluster defaults)
gets them too: ``min.insync.replicas=2``, ``unclean.leader.election.enable=false``,
``offsets.topic.replication.factor=3``, ``zookeeper.session.timeout.ms=6000``,
``replica.lag.time.max.ms=4000``, no automatic leader rebalance.

Workload (:class:`Committer`): one confluent-kafka consumer per group that
never subscribes (``assign()``-style: generation -1, empty member id) and
commits synchronously, in a loop, the offset ``n`` (n = 1, 2, 3, …) for every
partition of a topic.  Three groups are chosen so that their coordinators
(the leaders of ``__consumer_offsets-<abs(javaHash(group)) % 50>``) are three
different brokers.  Every commit is recorded with its send time, its outcome
(acknowledged: every partition answered without error; failed: an error or an
exception) and the time of the outcome.  A :class:`Reader` meanwhile reads the
committed offsets of every group (``committed()``: OffsetFetch) in a loop and
records what it got and when.

Faults (:func:`test_acknowledged_commits_survive_coordinator_kill_freeze_and_shutdown`),
each against the *current* coordinator of one of the groups, twice each:
SIGKILL (restarted after its ZooKeeper session expired), SIGSTOP for longer
than the session timeout then SIGCONT (a zombie coordinator: a raw
OffsetCommit pinned to it while frozen, and one right after SIGCONT, must not
be acknowledged unless durable — they are in the history, for groups that
hash to the same ``__consumer_offsets`` partition), and SIGTERM (controlled
shutdown, then a restart).

Verdict (:func:`check_offsets`), per group and partition: the final committed
offset (all brokers healthy, full ISR) is >= the last acknowledged commit and
is a value that was sent (a commit whose acknowledgement was lost may have
been applied); and during the run no read returned less than a commit
acknowledged before the read was sent, less than an earlier read, or a value
never sent.  Figures: per fault, the time from the fault to the first
acknowledged commit sent after it, for each group whose coordinator was hit.

Negative controls: :func:`test_check_offsets_reports_fabricated_violations`
feeds the checker a fabricated history; and
:func:`test_negative_control_unclean_election_of_the_offsets_partition_loses_commits`
makes a real loss on the same durable cluster: a follower of a group's
``__consumer_offsets`` partition is killed (it leaves the ISR), commits are
acknowledged by the two others (2 = min.insync.replicas), both of those are
killed, the stale follower is restarted and elected through an admin UNCLEAN
ElectLeaders (which ignores the topic's ``unclean.leader.election.enable``,
as in Kafka) — the same checker must report the commits acknowledged after
the follower died as lost.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

import pytest

from mafka.errors import ErrorCode
from mafka.group.offsets_records import offsets_partition_for
from tests.harness.chaos import Chaos, create_topic, healed
from tests.harness.cluster import ClusterSpec

pytestmark = pytest.mark.integration

OFFSETS = "__consumer_offsets"
OFFSETS_PARTITIONS = 50
SESSION_TIMEOUT_S = 6.0
SETTINGS = {
    "zookeeper.session.timeout.ms": str(int(SESSION_TIMEOUT_S * 1000)),
    "replica.lag.time.max.ms": "4000",
    "min.insync.replicas": "2",
    "unclean.leader.election.enable": "false",
    "default.replication.factor": "3",
    "offsets.topic.replication.factor": "3",
    "auto.leader.rebalance.enable": "false",  # leaders move only when the faults move them
    "group.initial.rebalance.delay.ms": "0",
}
PARTITIONS = 3  # of the data topic whose offsets are committed
NO_OFFSET = -1001  # what confluent-kafka reports for "nothing committed"

Key = tuple[str, int]  # (group, partition)


# ----------------------------------------------------------------------------------------------
# History and checker


@dataclass
class Commit:
    """One OffsetCommit: ``offsets`` (partition → value) of ``group``; ``ok`` True = acknowledged."""

    group: str
    offsets: dict[int, int]
    sent_at: float
    done_at: float | None = None
    ok: bool | None = None  # None: no answer (yet)
    error: str | None = None
    via: str = "confluent-kafka"


@dataclass
class Read:
    """One OffsetFetch answer: partition → committed value (``NO_OFFSET``: none)."""

    group: str
    offsets: dict[int, int]
    sent_at: float
    done_at: float


@dataclass
class OffsetReport:
    """What :func:`check_offsets` found; ``ok`` is True when there is no violation."""

    keys: int = 0
    commits: int = 0
    acked: int = 0
    failed: int = 0
    unanswered: int = 0
    reads: int = 0
    #: final value below the last acknowledged: key → (final, last acknowledged)
    lost: dict[Key, tuple[int, int]] = field(default_factory=dict)
    #: final value that was never sent: key → final
    final_unsent: dict[Key, int] = field(default_factory=dict)
    #: a read below a commit acknowledged before the read was sent: (key, read, acknowledged, read sent at)
    read_below_acked: list[tuple[Key, int, int, float]] = field(default_factory=list)
    #: a read below an earlier read's value: (key, read, earlier read, read sent at)
    read_regressions: list[tuple[Key, int, int, float]] = field(default_factory=list)
    #: a read of a value never sent (before the read was answered): (key, read, read sent at)
    read_unsent: list[tuple[Key, int, float]] = field(default_factory=list)
    #: information: keys whose final value is above the last acknowledged (an unacknowledged commit applied)
    final_above_acked: dict[Key, tuple[int, int]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not (self.lost or self.final_unsent or self.read_below_acked or self.read_regressions
                    or self.read_unsent)

    def summary(self, examples: int = 5) -> str:
        lines = [
            f"{self.keys} group-partitions: {self.commits} commits (acked {self.acked}, failed {self.failed}, "
            f"unanswered {self.unanswered}), {self.reads} reads; final above last ack (unacknowledged commit "
            f"applied): {len(self.final_above_acked)}",
            f"violations: lost {len(self.lost)}, final unsent {len(self.final_unsent)}, "
            f"read below acked {len(self.read_below_acked)}, read regressions {len(self.read_regressions)}, "
            f"read unsent {len(self.read_unsent)}",
        ]
        if self.lost:
            lines.append(f"  lost (key: final, last acked) e.g. {dict(list(self.lost.items())[:examples])}")
        if self.final_unsent:
            lines.append(f"  final unsent e.g. {dict(list(self.final_unsent.items())[:examples])}")
        for name in ("read_below_acked", "read_regressions", "read_unsent"):
            items = getattr(self, name)
            if items:
                lines.append(f"  {name} e.g. {items[:examples]}")
        return "\n".join(lines)


def check_offsets(commits: Iterable[Commit], reads: Iterable[Read], final: Mapping[Key, int]) -> OffsetReport:
    """Checks a commit history, the reads made during it and the final committed offsets.

    Every committer's values increase per key, so "the last acknowledged" is the
    highest acknowledged value.  Rules (per key = group, partition):

    * final >= the highest acknowledged value (else **lost**);
    * final is a value some commit sent, or ``NO_OFFSET`` if nothing was
      acknowledged (else **final unsent**);
    * a read is not below any value acknowledged before the read was sent
      (**read below acked**), not below what an earlier read (answered before
      it was sent) returned (**read regression**), and a value sent before it
      was answered, or ``NO_OFFSET`` (**read unsent**).
    """
    report = OffsetReport()
    sent: dict[Key, list[tuple[float, int]]] = defaultdict(list)  # (sent_at, value)
    acked: dict[Key, list[tuple[float, int]]] = defaultdict(list)  # (done_at, value)
    for c in commits:
        report.commits += 1
        if c.ok:
            report.acked += 1
        elif c.ok is None:
            report.unanswered += 1
        else:
            report.failed += 1
        for p, v in c.offsets.items():
            sent[(c.group, p)].append((c.sent_at, v))
            if c.ok:
                assert c.done_at is not None
                acked[(c.group, p)].append((c.done_at, v))
    keys = set(sent) | set(final)
    report.keys = len(keys)
    for key in sorted(keys):
        values = {v for _, v in sent.get(key, [])}
        best = max((v for _, v in acked.get(key, [])), default=None)
        got = final.get(key, NO_OFFSET)
        if best is not None and got < best:
            report.lost[key] = (got, best)
        elif best is not None and got > best:
            report.final_above_acked[key] = (got, best)
        if got not in values and not (got == NO_OFFSET and best is None):
            report.final_unsent[key] = got

    by_key_reads: dict[Key, list[tuple[float, float, int]]] = defaultdict(list)
    for r in reads:
        report.reads += 1
        for p, v in r.offsets.items():
            by_key_reads[(r.group, p)].append((r.sent_at, r.done_at, v))
    for key, rs in sorted(by_key_reads.items()):
        acks = sorted(acked.get(key, []))
        sends = sorted(sent.get(key, []))
        answered = sorted((done, v) for _, done, v in rs)
        for sent_at, done_at, v in sorted(rs):
            floor = max((a for t, a in acks if t <= sent_at), default=None)
            if floor is not None and v < floor:
                report.read_below_acked.append((key, v, floor, sent_at))
            earlier = max((x for t, x in answered if t <= sent_at), default=None)
            if earlier is not None and v < earlier:
                report.read_regressions.append((key, v, earlier, sent_at))
            if v != NO_OFFSET and v not in {x for t, x in sends if t <= done_at}:
                report.read_unsent.append((key, v, sent_at))
    return report


def test_check_offsets_reports_fabricated_violations():
    """Checker-level control: a clean history passes; each kind of violation is reported."""
    g = "g"
    clean = [Commit(g, {0: 1}, 0.0, 0.1, True), Commit(g, {0: 2}, 0.2, 0.3, True),
             Commit(g, {0: 3}, 0.4, 5.0, False, "timed out")]
    reads = [Read(g, {0: NO_OFFSET}, -1.0, -0.9), Read(g, {0: 1}, 0.15, 0.16), Read(g, {0: 2}, 0.35, 0.36)]
    assert check_offsets(clean, reads, {(g, 0): 2}).ok
    above = check_offsets(clean, reads, {(g, 0): 3})  # the unacknowledged commit was applied: allowed
    assert above.ok and above.final_above_acked == {(g, 0): (3, 2)}
    lost = check_offsets(clean, reads, {(g, 0): 1})
    assert not lost.ok and lost.lost == {(g, 0): (1, 2)}, lost.summary()
    gone = check_offsets(clean, reads, {})
    assert gone.lost == {(g, 0): (NO_OFFSET, 2)} and gone.final_unsent == {(g, 0): NO_OFFSET}, gone.summary()
    assert check_offsets(clean, reads, {(g, 0): 7}).final_unsent == {(g, 0): 7}
    back = check_offsets(clean, reads + [Read(g, {0: 1}, 0.5, 0.6)], {(g, 0): 2})
    assert back.read_below_acked == [((g, 0), 1, 2, 0.5)] and back.read_regressions == [((g, 0), 1, 2, 0.5)]
    early = check_offsets(clean, [Read(g, {0: 2}, 0.05, 0.1)], {(g, 0): 2})  # read before it was sent
    assert early.read_unsent == [((g, 0), 2, 0.05)], early.summary()


# ----------------------------------------------------------------------------------------------
# Workload


def _consumer_config(bootstrap: str, group: str) -> dict[str, object]:
    return {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "enable.auto.commit": False,
        # a request to a frozen coordinator fails after this (librdkafka's default is 60 s)
        "socket.timeout.ms": 10000,
        "reconnect.backoff.ms": 50,
        "reconnect.backoff.max.ms": 500,
        "retry.backoff.ms": 100,
        "topic.metadata.refresh.interval.ms": 2000,
        "logger": logging.getLogger("offsets.client"),  # librdkafka's log lines go to pytest's capture
    }


class Committer:
    """Synchronous standalone commits of n = 1, 2, … for every partition, in a background thread."""

    def __init__(self, bootstrap: str, group: str, topic: str, partitions: int = PARTITIONS,
                 pause_s: float = 0.02) -> None:
        self.bootstrap, self.group, self.topic, self.partitions = bootstrap, group, topic, partitions
        self.pause_s = pause_s
        self.commits: list[Commit] = []
        self.fatal: str | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=f"committer-{group}", daemon=True)

    def start(self) -> Committer:
        self._thread.start()
        return self

    def stop(self, timeout: float = 60.0) -> None:
        self._stop.set()
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError(f"committer {self.group}: a synchronous commit did not return within {timeout:.0f} s "
                               f"of the stop (in flight: {self.in_flight()})")

    def in_flight(self) -> Commit | None:
        with self._lock:
            last = self.commits[-1] if self.commits else None
        return last if last is not None and last.ok is None else None

    def _run(self) -> None:
        from confluent_kafka import Consumer, KafkaException, TopicPartition

        try:
            consumer = Consumer(_consumer_config(self.bootstrap, self.group))
        except Exception as exc:  # noqa: BLE001 - reported through `fatal`
            self.fatal = repr(exc)
            return
        n = 0
        try:
            while not self._stop.is_set():
                n += 1
                commit = Commit(self.group, dict.fromkeys(range(self.partitions), n), time.monotonic())
                with self._lock:
                    self.commits.append(commit)
                try:
                    result = consumer.commit(offsets=[TopicPartition(self.topic, p, n) for p in range(self.partitions)],
                                             asynchronous=False)
                    errors = [f"{tp.partition}: {tp.error}" for tp in result or [] if tp.error is not None]
                    ok, error = not errors, "; ".join(errors) or None
                except KafkaException as exc:
                    ok, error = False, str(exc.args[0]) if exc.args else repr(exc)
                except Exception as exc:  # noqa: BLE001 - anything else ends the workload
                    ok, error = False, repr(exc)
                    self.fatal = error
                commit.done_at, commit.ok, commit.error = time.monotonic(), ok, error
                if self.fatal:
                    break
                time.sleep(self.pause_s if ok else 0.1)
        finally:
            consumer.close()

    # -- observations -----------------------------------------------------------------------

    def snapshot(self) -> list[Commit]:
        with self._lock:
            return list(self.commits)

    def acked(self, sent_after: float | None = None) -> list[Commit]:
        return [c for c in self.snapshot() if c.ok and (sent_after is None or c.sent_at > sent_after)]

    def first_ack_sent_after(self, t: float) -> Commit | None:
        acked = self.acked(sent_after=t)
        return min(acked, key=lambda c: c.done_at) if acked else None

    def wait_ack(self, after: float, timeout: float) -> Commit:
        """The first acknowledged commit sent after ``after`` (waiting for it)."""
        deadline = time.monotonic() + timeout
        while True:
            c = self.first_ack_sent_after(after)
            if c is not None:
                return c
            if time.monotonic() > deadline:
                last = self.snapshot()[-3:]
                raise TimeoutError(f"group {self.group}: no commit sent after the fault was acknowledged within "
                                   f"{timeout:.0f} s (last commits: {last}; fatal {self.fatal})")
            time.sleep(0.05)

    def errors(self) -> dict[str, int]:
        out: dict[str, int] = defaultdict(int)
        for c in self.snapshot():
            if c.ok is False:
                out[(c.error or "?")[:120]] += 1
        return dict(out)


class Reader:
    """Reads every group's committed offsets in a loop (one standalone consumer per group)."""

    def __init__(self, bootstrap: str, groups: list[str], topic: str, partitions: int = PARTITIONS) -> None:
        self.bootstrap, self.groups, self.topic, self.partitions = bootstrap, groups, topic, partitions
        self.reads: list[Read] = []
        self.failures = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="reader", daemon=True)

    def start(self) -> Reader:
        self._thread.start()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        from confluent_kafka import Consumer, KafkaException, TopicPartition

        consumers = {g: Consumer(_consumer_config(self.bootstrap, g)) for g in self.groups}
        tps = [TopicPartition(self.topic, p) for p in range(self.partitions)]
        try:
            while not self._stop.is_set():
                for g, consumer in consumers.items():
                    sent = time.monotonic()
                    try:
                        result = consumer.committed(tps, timeout=3)
                    except KafkaException:
                        self.failures += 1
                        continue
                    done = time.monotonic()
                    if any(tp.error is not None for tp in result):
                        self.failures += 1
                        continue
                    self.reads.append(Read(g, {tp.partition: tp.offset for tp in result}, sent, done))
                time.sleep(0.05)
        finally:
            for consumer in consumers.values():
                consumer.close()


def read_committed(bootstrap: str, group: str, topic: str, partitions: int = PARTITIONS,
                   timeout: float = 60.0) -> dict[Key, int]:
    """The group's committed offsets (a fresh confluent-kafka consumer's committed(), retried)."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        consumer = Consumer(_consumer_config(bootstrap, group))
        try:
            result = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=10)
            if all(tp.error is None for tp in result):
                return {(group, tp.partition): tp.offset for tp in result}
            last = [str(tp.error) for tp in result]
        except KafkaException as exc:
            last = exc
        finally:
            consumer.close()
        time.sleep(0.5)
    raise TimeoutError(f"no OffsetFetch answer for group {group} within {timeout:.0f} s (last: {last})")


def raw_offset_commit(host: str, port: int, group: str, topic: str, partition: int, value: int,
                      socket_timeout: float) -> int | OSError:
    """One OffsetCommit v2 (generation -1) straight to ``host:port``: the partition's error code, or
    the OSError when no answer came within ``socket_timeout``."""
    from tests.harness.raw_client import BlockingClient

    body = {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "retention_time_ms": -1,
            "topics": [{"name": topic, "partitions": [
                {"partition_index": partition, "committed_offset": value, "committed_metadata": None}]}]}
    try:
        with BlockingClient(f"{host}:{port}", client_id="zombie-probe", timeout_s=socket_timeout) as client:
            response = client.send_once((host, port), 8, 2, body, socket_timeout)
    except OSError as exc:
        return exc
    return response.topics[0].partitions[0].error_code


def group_on_partition(partition: int, prefix: str) -> str:
    """A fresh group name whose ``__consumer_offsets`` partition is ``partition``."""
    for i in range(100000):
        name = f"{prefix}-{i}"
        if offsets_partition_for(name, OFFSETS_PARTITIONS) == partition:
            return name
    raise AssertionError(f"no group name for partition {partition}")


# ----------------------------------------------------------------------------------------------
# Fixtures


CLUSTER = ClusterSpec(settings=SETTINGS, shared=False)  # kills, freezes and restarts coordinators


@pytest.fixture(scope="module")
def cluster(cluster):
    """The module's cluster (``CLUSTER``) with its topic and every ``__consumer_offsets`` partition led and in sync."""
    cluster.topic = create_topic(cluster, partitions=PARTITIONS, rf=3)
    # the first OffsetFetch makes a broker create __consumer_offsets (FindCoordinator)
    read_committed(cluster.bootstrap, f"bootstrap-{uuid.uuid4().hex[:6]}", cluster.topic)
    ch = Chaos(cluster)
    try:
        deadline = time.monotonic() + 90
        for p in range(OFFSETS_PARTITIONS):
            ch.wait_leader(OFFSETS, p, timeout=max(1.0, deadline - time.monotonic()))
        ch.wait_full_isr(OFFSETS, range(OFFSETS_PARTITIONS), timeout=max(1.0, deadline - time.monotonic()))
    finally:
        ch.close()
    return cluster


@pytest.fixture
def chaos(cluster):
    """A fault injector; every broker is running and registered before and after the test."""
    with healed(cluster) as ch:
        yield ch


def coordinator(chaos: Chaos, group: str, timeout: float = 30.0) -> int:
    """The leader of the group's ``__consumer_offsets`` partition per ZooKeeper."""
    return chaos.wait_leader(OFFSETS, offsets_partition_for(group, OFFSETS_PARTITIONS), timeout=timeout)


def groups_led_by_each_broker(chaos: Chaos, prefix: str) -> dict[int, str]:
    """broker → a fresh group name whose coordinator it currently is."""
    out: dict[int, str] = {}
    for i in range(10000):
        name = f"{prefix}-{i}"
        leader = chaos.leader(OFFSETS, offsets_partition_for(name, OFFSETS_PARTITIONS))
        if leader >= 0 and leader not in out:
            out[leader] = name
        if len(out) == len(chaos.broker_ids):
            return out
    raise AssertionError(f"the __consumer_offsets leaders are not spread over every broker: {out}")


def explain(chaos: Chaos, groups: Iterable[str], committers: Iterable[Committer] = ()) -> str:
    t0 = chaos.events[0].at if chaos.events else time.monotonic()
    lines = [f"cluster dir {chaos.cluster.directory} (broker logs: broker-N/server.log)"]
    lines += [f"  +{e.at - t0:7.2f}s {e.what} broker {e.broker} {e.detail}" for e in chaos.events]
    for g in groups:
        p = offsets_partition_for(g, OFFSETS_PARTITIONS)
        lines.append(f"  group {g}: {OFFSETS}-{p} state {chaos.partition_state(OFFSETS, p)}")
    lines.append(f"  registered {sorted(chaos.registered())}, controller {chaos.controller()}")
    for c in committers:
        lines.append(f"  committer {c.group}: {len(c.acked())} acked, errors {c.errors()}, fatal {c.fatal}, "
                     f"in flight {c.in_flight()}")
    return "\n".join(lines)


@contextmanager
def explained(chaos: Chaos, groups: Iterable[str], committers: Iterable[Committer] = ()) -> Iterator[None]:
    """A bounded wait that times out fails the test with the fault timeline attached."""
    try:
        yield
    except TimeoutError as exc:
        pytest.fail(f"{exc}\n{explain(chaos, groups, committers)}")


# ----------------------------------------------------------------------------------------------
# The faults


@dataclass
class Fault:
    kind: str
    victim: int
    at: float
    affected: list[str]
    successor: dict[str, int] = field(default_factory=dict)
    elected_after: dict[str, float] = field(default_factory=dict)
    #: group → seconds from the fault to the acknowledgement of the first commit sent after it
    window: dict[str, float] = field(default_factory=dict)
    zombie: dict[str, object] = field(default_factory=dict)
    zombie_group: str = ""
    #: group → seconds from the fault to the next acknowledgement of any commit (one in flight included)
    next_ack: dict[str, float] = field(default_factory=dict)
    #: group → seconds from the fault to the first raw OffsetCommit the new coordinator acknowledged
    direct: dict[str, float] = field(default_factory=dict)
    #: seconds from the fault to SIGCONT / to the restart
    down_for: float = 0.0

    def line(self) -> str:
        parts = [f"{self.kind:8s} broker {self.victim} (down or frozen {self.down_for:.1f} s)"]
        for g in self.affected:
            parts.append(f"{g}: coordinator → {self.successor.get(g)} after {self.elected_after.get(g, float('nan')):.2f} s, "
                         f"raw commit to it acked {self.direct.get(g, float('nan')):.2f} s, "
                         f"confluent-kafka next ack {self.next_ack.get(g, float('nan')):.2f} s, "
                         f"first ack of a commit sent after the fault {self.window.get(g, float('nan')):.2f} s")
        if self.zombie:
            parts.append(f"zombie answered {self.zombie}")
        return "; ".join(parts)


def test_acknowledged_commits_survive_coordinator_kill_freeze_and_shutdown(cluster, chaos):
    topic = cluster.topic
    started = time.monotonic()
    by_broker = groups_led_by_each_broker(chaos, f"dur-{uuid.uuid4().hex[:6]}")
    groups = [by_broker[b] for b in sorted(by_broker)]
    committers = {g: Committer(cluster.bootstrap, g, topic).start() for g in groups}
    reader = Reader(cluster.bootstrap, groups, topic).start()
    probes: list[Commit] = []  # raw OffsetCommits pinned to a zombie coordinator
    faults: list[Fault] = []
    all_groups = list(groups)
    why = lambda: explain(chaos, all_groups, committers.values())  # noqa: E731
    offsets_partitions = sorted({offsets_partition_for(g, OFFSETS_PARTITIONS) for g in groups})
    try:
        with explained(chaos, all_groups, committers.values()):
            for c in committers.values():
                c.wait_ack(0.0, 30)
            time.sleep(1.0)
            for i, kind in enumerate(["SIGKILL", "SIGSTOP", "SIGTERM"] * 2):
                target = groups[i % len(groups)]
                victim = coordinator(chaos, target)
                affected = [g for g in groups if coordinator(chaos, g) == victim]
                fault = Fault(kind, victim, 0.0, affected)
                if kind == "SIGKILL":
                    fault.at = chaos.kill(victim)
                elif kind == "SIGTERM":
                    fault.at = chaos.terminate(victim)
                else:
                    fault.at = chaos.pause(victim)
                    zombie_probe(chaos, fault, topic, probes, all_groups, i)
                for g in affected:
                    new = chaos.wait_leader(OFFSETS, offsets_partition_for(g, OFFSETS_PARTITIONS),
                                            timeout=SESSION_TIMEOUT_S + 30, not_in=[victim])
                    fault.successor[g] = new
                    fault.elected_after[g] = time.monotonic() - fault.at
                for g in affected:
                    fault.direct[g] = direct_commit(chaos, victim, offsets_partition_for(g, OFFSETS_PARTITIONS),
                                                    topic, probes, all_groups, f"{i}-{g}") - fault.at
                for g in affected:
                    ack = committers[g].wait_ack(fault.at, 60)
                    fault.window[g] = ack.done_at - fault.at
                    fault.next_ack[g] = min(c.done_at for c in committers[g].snapshot()
                                            if c.ok and c.done_at > fault.at) - fault.at
                if kind == "SIGSTOP":
                    chaos.wait_unregistered(victim)  # frozen past its session (normally long since)
                    time.sleep(1.0)
                    fault.down_for = chaos.resume(victim) - fault.at
                    zombie_awake(chaos, fault, topic, probes, all_groups, i)
                    chaos.wait_registered(victim, timeout=60)
                else:
                    fault.down_for = chaos.restart(victim) - fault.at  # after its old registration is gone
                chaos.wait_full_isr(OFFSETS, offsets_partitions, timeout=60)
                for g in groups:  # every group commits again before the next fault
                    committers[g].wait_ack(time.monotonic(), 60)
                faults.append(fault)
                print(f"fault {i + 1}: {fault.line()}")
            time.sleep(1.0)
    finally:
        reader.stop()
        for c in committers.values():
            c.stop()

    with explained(chaos, all_groups, committers.values()):
        chaos.heal()
        chaos.wait_full_isr(OFFSETS, offsets_partitions, timeout=60)
        final: dict[Key, int] = {}
        for g in all_groups:
            final.update(read_committed(cluster.bootstrap, g, topic))
    commits = [c for committer in committers.values() for c in committer.snapshot()] + probes
    report = check_offsets(commits, reader.reads, final)
    elapsed = time.monotonic() - started
    print(f"offsets durability: {report.summary()}")
    print(f"reader: {len(reader.reads)} reads, {reader.failures} failed; commit errors: "
          f"{ {g: c.errors() for g, c in committers.items()} }")
    for kind in ("SIGKILL", "SIGSTOP", "SIGTERM"):
        windows = [w for f in faults if f.kind == kind for w in f.window.values()]
        nexts = [w for f in faults if f.kind == kind for w in f.next_ack.values()]
        direct = [w for f in faults if f.kind == kind for w in f.direct.values()]
        if windows:
            print(f"commit unavailability after {kind} of the coordinator: fault → a raw OffsetCommit acked by "
                  f"the new coordinator {', '.join(f'{w:.2f}' for w in direct)} s; confluent-kafka: fault → next ack "
                  f"{', '.join(f'{w:.2f}' for w in nexts)} s; fault → first ack of a commit sent after it "
                  f"{', '.join(f'{w:.2f}' for w in windows)} s (max {max(windows):.2f} s)")
    refused: dict[str, int] = defaultdict(int)
    for c in probes:
        if c.ok is False:
            refused[f"{c.via.rsplit(' ', 1)[0]}: {c.error}"] += 1
    print(f"raw OffsetCommits refused (how: error code → count): {dict(refused)}")
    print(f"test body took {elapsed:.1f} s")
    text = f"{report.summary()}\n{why()}"
    assert all(c.fatal is None for c in committers.values()), text
    assert report.ok, text
    assert report.acked >= 200, text
    for f in faults:
        for name, answer in f.zombie.items():
            assert answer != ErrorCode.NONE, (f"the zombie coordinator {f.victim} acknowledged the {name} commit "
                                              f"(durable, per the checker — but it could not have replicated it)\n{text}")
    assert len(faults) == 6 and all(f.window for f in faults), text


def direct_commit(chaos: Chaos, victim: int, partition: int, topic: str, probes: list[Commit], groups: list[str],
                  tag: str, timeout: float = 60.0) -> float:
    """Raw OffsetCommits (generation -1, 5 s socket timeout) for a fresh group of ``__consumer_offsets-<partition>``
    to whichever broker ZooKeeper names its leader (never ``victim``) until one is acknowledged; returns when.
    The broker's side of the unavailability window, without any client's timeouts and retry backoffs."""
    group = group_on_partition(partition, f"direct-{tag}")
    groups.append(group)
    deadline = time.monotonic() + timeout
    value, answers = 0, []
    while time.monotonic() < deadline:
        leader = chaos.leader(OFFSETS, partition)
        if leader < 0 or leader == victim:
            time.sleep(0.05)
            continue
        info = chaos.cluster.broker(leader)
        value += 1
        commit = Commit(group, {0: value}, time.monotonic(), via=f"raw, to ZooKeeper's leader {leader}")
        probes.append(commit)
        answer = raw_offset_commit(info["host"], info["port"], group, topic, 0, value, socket_timeout=5)
        commit.done_at = time.monotonic()
        commit.ok = answer == ErrorCode.NONE
        if commit.ok:
            return commit.done_at
        commit.error = repr(answer)
        answers.append((leader, commit.error))
        time.sleep(0.05)
    raise TimeoutError(f"no raw OffsetCommit to the leader of {OFFSETS}-{partition} was acknowledged within "
                       f"{timeout:.0f} s (answers: {answers[-5:]})")


def zombie_probe(chaos: Chaos, fault: Fault, topic: str, probes: list[Commit], groups: list[str], i: int) -> None:
    """While the coordinator is frozen: an OffsetCommit pinned to it (queued in its socket) for a group
    of the same ``__consumer_offsets`` partition as the fault's groups, answered when it wakes."""
    info = chaos.cluster.broker(fault.victim)
    group = group_on_partition(offsets_partition_for(fault.affected[0], OFFSETS_PARTITIONS), f"zombie-q{i}")
    groups.append(group)
    commit = Commit(group, {0: 1000 + i}, time.monotonic(), via=f"raw, pinned to frozen broker {fault.victim}")
    probes.append(commit)

    def run() -> None:
        answer = raw_offset_commit(info["host"], info["port"], group, topic, 0, 1000 + i, socket_timeout=90)
        commit.done_at = time.monotonic()
        commit.ok = answer == ErrorCode.NONE
        commit.error = None if commit.ok else repr(answer)
        fault.zombie["queued"] = answer if isinstance(answer, OSError) else ErrorCode(answer)

    threading.Thread(target=run, name="zombie-queued", daemon=True).start()
    fault.zombie_group = group


def zombie_awake(chaos: Chaos, fault: Fault, topic: str, probes: list[Commit], groups: list[str], i: int) -> None:
    """Right after SIGCONT: one more OffsetCommit to the former coordinator; waits for both answers."""
    info = chaos.cluster.broker(fault.victim)
    group = group_on_partition(offsets_partition_for(fault.affected[0], OFFSETS_PARTITIONS), f"zombie-a{i}")
    groups.append(group)
    commit = Commit(group, {0: 2000 + i}, time.monotonic(), via=f"raw, to awoken broker {fault.victim}")
    probes.append(commit)
    answer = raw_offset_commit(info["host"], info["port"], group, topic, 0, 2000 + i, socket_timeout=30)
    commit.done_at = time.monotonic()
    commit.ok = answer == ErrorCode.NONE
    commit.error = None if commit.ok else repr(answer)
    fault.zombie["awake"] = answer if isinstance(answer, OSError) else ErrorCode(answer)
    queued = next(c for c in probes if c.group == fault.zombie_group)
    chaos.wait_until(lambda: queued.done_at is not None, 100, "the commit pinned to the zombie got an answer")


# ----------------------------------------------------------------------------------------------
# Negative control


def test_negative_control_unclean_election_of_the_offsets_partition_loses_commits(cluster, chaos):
    from mafka.cli.leader_election import elect_leaders
    from mafka.client.admin import AdminClient

    topic = cluster.topic
    group = f"neg-{uuid.uuid4().hex[:6]}"
    part = offsets_partition_for(group, OFFSETS_PARTITIONS)
    leader = coordinator(chaos, group)
    with explained(chaos, [group]):
        chaos.wait_full_isr(OFFSETS, [part], timeout=30)
    others = [r for r in chaos.replicas(OFFSETS, part) if r != leader]
    stale, survivor = others[0], others[1]
    committer = Committer(cluster.bootstrap, group, topic).start()
    try:
        with explained(chaos, [group], [committer]):
            committer.wait_ack(0.0, 30)
            time.sleep(1.0)
            killed = chaos.kill(stale)  # it leaves the ISR; it has every commit acknowledged until now
            chaos.wait_isr(OFFSETS, part, lambda isr: stale not in isr, timeout=SESSION_TIMEOUT_S + 20,
                           what=f"broker {stale} left the ISR of {OFFSETS}-{part}")
            shrunk = time.monotonic()
            committer.wait_ack(shrunk, 30)  # acknowledged by the leader and one follower (min.insync.replicas=2)
            time.sleep(1.0)
    finally:
        committer.stop()
    commits = committer.snapshot()
    before = max(c.offsets[0] for c in commits if c.ok and c.done_at <= killed)
    after = [c.offsets[0] for c in commits if c.ok and c.done_at > shrunk]
    assert after, "no commit was acknowledged with the stale follower out of the ISR"
    with explained(chaos, [group]):
        for b in (leader, survivor):
            chaos.kill(b)
        for b in (leader, survivor):
            chaos.wait_dead(b)
            chaos.wait_unregistered(b)
        chaos.restart(stale)  # the only broker: it becomes the controller; the partition is offline
        chaos.wait_until(lambda: chaos.controller() == stale, 30, f"broker {stale} is the controller")
        info = cluster.broker(stale)
        admin = AdminClient({"bootstrap.servers": f"{info['host']}:{info['port']}", "client.id": "neg-control"})
        try:
            results = elect_leaders(admin, 1, [(OFFSETS, part)], timeout_s=20)
        finally:
            admin.close()
        chaos.note("UNCLEAN ElectLeaders", stale, str(results))
        chaos.wait_leader(OFFSETS, part, timeout=30)
    assert results.get((OFFSETS, part), (None,))[0] == ErrorCode.NONE, f"{results}\n{explain(chaos, [group])}"
    assert chaos.leader(OFFSETS, part) == stale
    with explained(chaos, [group]):
        during = read_committed(f"{info['host']}:{info['port']}", group, topic)
        for b in (leader, survivor):
            chaos.restart(b)  # they truncate to the unclean leader's log
        chaos.wait_full_isr(OFFSETS, [part], timeout=60)
        final = read_committed(cluster.bootstrap, group, topic)
    report = check_offsets(commits, [], final)
    print(f"negative control (unclean election of broker {stale} for {OFFSETS}-{part}): committed {during} "
          f"on the unclean leader, {final} after the others rejoined; last acknowledged before the kill {before}, "
          f"{len(after)} acknowledged after the ISR shrank (up to {max(after)})\n{report.summary()}")
    why = f"{report.summary()}\n{explain(chaos, [group])}"
    assert not report.ok, f"the checker saw no loss after an unclean election\n{why}"
    assert set(report.lost) == {(group, p) for p in range(PARTITIONS)}, why
    for got, best in report.lost.values():
        # The stale replica holds everything acknowledged before it was killed, and possibly a
        # commit or two it fetched just before dying whose acknowledgement then waited for the
        # ISR to shrink (seen once: it held the first "after" commit) — but never the last.
        assert best == max(after) and before <= got < max(after), why
