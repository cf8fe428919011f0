"""Real-network chaos on the compose cluster: the fault table of ``make chaos-docker``.

One compose project (``docker/docker-compose.yml``: three ZooKeeper members,
three brokers, each on its own address) runs the durable profile — RF 3,
``min.insync.replicas=2``, ``acks=all``, idempotent producer, unclean election
off — while an idempotent confluent-kafka producer on the host
(:class:`~tests.harness.chaos.ContinuousProducer`) writes unique values
to every partition of one topic for the whole run.  The faults are applied
one at a time, each held, healed, and followed by a wait until every ISR is
full again:

========================== ==================================================================
row                        fault
========================== ==================================================================
kill-leader                ``docker kill`` of partition 0's leader, ``docker start`` after the hold
pause-leader               ``docker pause`` of the leader past the ZooKeeper session (a zombie); it must
                           keep its partition for 70 % of the session (no fast failover: it refuses nothing)
restart-broker             ``docker restart`` (SIGTERM: a controlled shutdown, then start)
isolate-broker             the leader cut from every container and from the host's clients; as for
                           pause-leader, no fast failover before 70 % of the session
leader-cut-from-zookeeper  the leader cut from the three ZooKeeper members only: it still
                           reaches the clients and the other brokers
follower-cut-from-leader   one follower cut from partition 0's leader only
isolate-zookeeper-node     one ZooKeeper member cut from everything (the ensemble keeps a quorum)
kill-controller            ``docker kill`` of the controller, started again after the hold
leader-cut-from-clients    the leader cut from the host's clients only (the producer's link)
zookeeper-quorum-lost      two ZooKeeper members cut from everything: no quorum for the hold
kill-all-brokers           ``docker kill`` of all three brokers together, then all started
kill-zookeeper-leader      ``docker kill`` of the ensemble's leader (found with ``srvr``)
leader-deaf-to-followers   one way: the leader drops what its followers send (their fetches)
rolling-restart            every broker restarted in turn, each healthy with full ISRs before the next
lossy-leader               5 % of the leader's packets dropped, both ways, on every link (iptables'
                           ``statistic`` match: this kernel has no ``sch_netem``)
slow-leader-link           the leader's outgoing traffic shaped to 64 kbit/s with up to 400 ms of
                           queueing (``tc`` token bucket): a slow, congested link
zookeeper-rolling-restart  every ZooKeeper member restarted in turn; after each, all three brokers
                           must be registered under ``/brokers/ids`` again
kill-group-coordinator     ``docker kill`` of the consumer group's coordinator (the leader of its
                           ``__consumer_offsets`` partition), started again after the hold
kill-group-member          SIGKILL of one consumer group member process (its partitions must move)
========================== ==================================================================

Each row reports what it saw: acknowledged records lost and duplicated
(attributed to the row by acknowledgement time; the checker is
:func:`~tests.harness.checker.check_delivery` over a final drain), per
partition the longest time without an acknowledged write while the row ran
(the client-visible time without a working leader), the 99th percentile of
send → acknowledgement over the records sent during the row, the ISR shrinks
seen while the fault was held, and the time from the heal until every ISR was
full again.  ISRs are read from ZooKeeper, where leaders write them, by a probe
container no fault touches (:mod:`.zkview`): Metadata learns of ISR changes
seconds late, and not at all on a broker cut from the controller.

A consumer group (:class:`~tests.harness.group_chaos.GroupUnderChaos`:
three confluent-kafka members on the host committing after each message)
consumes the topic for the whole run; after the last row it must have consumed
every acknowledged record and committed every partition's end, and its commits
must never go below what an earlier owner committed
(:func:`~tests.harness.group_chaos.check_group`).

The **negative control** runs last on a topic of its own with
``unclean.leader.election.enable=true`` and ``min.insync.replicas=1``: its
leader is cut from both followers until the ISR is the leader alone, takes
acks=all writes alone, and is killed; a stale follower is elected uncleanly.
The same checker must report the records only the old leader had as lost.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..chaos import ContinuousProducer, Drain, drain
from ..checker import ACKED, check_delivery
from ..group_chaos import GroupReport, GroupUnderChaos, check_group, read_committed
from ..waits import wait_until
from .compose import BROKERS, ZOOKEEPERS, ComposeCluster
from .netfaults import NetFaults
from .zkview import ZkView

__all__ = ["ROWS", "DockerChaos", "RowResult"]

TOPIC = "chaos"
#: the slow-leader-link row's shaper: rate, and how long a packet may queue before it is dropped
SLOW_LINK = ("64kbit", 400)
CONTROL_TOPIC = "chaos-control"


@dataclass
class RowResult:
    """What one fault row saw."""

    name: str
    expectation: str
    started: float = 0.0
    healed: float = 0.0
    ended: float = 0.0
    #: acknowledged within [started, ended] and never read back / read twice
    lost: int = 0
    duplicates: int = 0
    #: partition → the longest time without an acknowledged write within the row
    gaps: dict[int, float] = field(default_factory=dict)
    #: seconds from the heal until every ISR was full again (None: not within the timeout)
    isr_full_after: float | None = None
    #: partition → times its ISR shrank while the fault was held (sampled once a second)
    isr_shrinks: dict[int, int] = field(default_factory=dict)
    #: the most ISR shrinks per minute per partition this row allows (None: not checked)
    max_shrinks_per_min: float | None = None
    held: float = 0.0
    #: the 99th percentile of send → acknowledgement over the records sent while the row ran (ms)
    ack_p99_ms: float | None = None
    notes: list[str] = field(default_factory=list)
    #: the negative control must lose records
    must_lose: bool = False
    error: str | None = None

    @property
    def ok(self) -> bool:
        if self.error is not None or self.isr_full_after is None:
            return False
        if self.must_lose:
            return self.lost > 0
        if self.max_shrinks_per_min is not None and self.shrinks_per_min() > self.max_shrinks_per_min:
            return False
        return self.lost == 0 and self.duplicates == 0

    def shrinks_per_min(self) -> float:
        """The most ISR shrinks of one partition per minute of hold."""
        return max(self.isr_shrinks.values(), default=0) * 60.0 / max(self.held, 60.0)

    def cells(self) -> list[str]:
        gaps = " ".join(f"{self.gaps[p]:.1f}" for p in sorted(self.gaps))
        isr = "never" if self.isr_full_after is None else f"{self.isr_full_after:.1f}"
        verdict = "PASS" if self.ok else "FAIL"
        if self.must_lose:
            verdict += " (loss caught)" if self.ok else " (loss NOT caught)"
        shrinks = " ".join(str(self.isr_shrinks.get(p, 0)) for p in sorted(self.gaps))
        p99 = "-" if self.ack_p99_ms is None else f"{self.ack_p99_ms:.0f}"
        return [self.name, self.expectation, str(self.lost), str(self.duplicates), gaps, p99, shrinks, isr, verdict]


TABLE_HEADER = ["row", "expectation", "lost", "dup", "longest without ack per partition (s)", "ack p99 (ms)",
                "ISR shrinks while held", "ISR full after heal (s)", "result"]


def ack_p99_ms(attempts: list[Any], start: float, end: float) -> float | None:
    """The 99th percentile of send → acknowledgement of the attempts sent in [start, end], in ms."""
    waits = sorted(a.acked_at - a.sent_at for a in attempts
                   if a.status == ACKED and a.acked_at is not None and start <= a.sent_at <= end)
    return waits[min(len(waits) - 1, int(len(waits) * 0.99))] * 1000.0 if waits else None


def render_table(rows: list[RowResult]) -> str:
    """The results as a Markdown table (what ``docker/README.md`` shows)."""
    lines = ["| " + " | ".join(TABLE_HEADER) + " |", "|" + "---|" * len(TABLE_HEADER)]
    lines += ["| " + " | ".join(r.cells()) + " |" for r in rows]
    return "\n".join(lines)


class DockerChaos:
    """The fault runner over one :class:`ComposeCluster`."""

    def __init__(self, cluster: ComposeCluster, *, partitions: int = 3, hold: float = 15.0, rate: float = 100.0,
                 session_timeout_s: float = 6.0, replica_lag_s: float = 10.0,
                 group_log_dir: Path | None = None, say: Callable[[str], None] = print) -> None:
        self.cluster = cluster
        self.net = NetFaults(cluster)
        self.zk = ZkView(cluster)
        self.partitions = partitions
        self.hold = hold
        self.rate = rate
        self.session_timeout_s = session_timeout_s
        self.replica_lag_s = replica_lag_s
        self.say = say
        self.results: list[RowResult] = []
        self.producer: ContinuousProducer | None = None
        self.group_log_dir = group_log_dir
        self.group: GroupUnderChaos | None = None
        self.group_report: GroupReport | None = None
        self.t0 = time.monotonic()

    # ------------------------------------------------------------------ cluster state

    def _admin(self) -> Any:
        from confluent_kafka.admin import AdminClient

        return AdminClient({"bootstrap.servers": self.cluster.bootstrap, "socket.timeout.ms": 5000})

    def partition_state(self, topic: str) -> dict[int, tuple[int, list[int], list[int]]]:
        """partition → (leader, replicas, ISR), from a broker's Metadata ({} when none answers)."""
        try:
            admin = self._admin()
            md = admin.list_topics(topic, timeout=5)
        except Exception:  # noqa: BLE001 - no broker answered: report nothing
            return {}
        t = md.topics.get(topic)
        if t is None or t.error is not None:
            return {}
        return {p: (m.leader, list(m.replicas), list(m.isrs)) for p, m in t.partitions.items()}

    def leader(self, topic: str, partition: int = 0, timeout: float = 60.0) -> int:
        """The partition's leader as Metadata reports it, waiting until there is one."""
        def current() -> int | None:
            state = self.partition_state(topic).get(partition)
            return state[0] if state is not None and state[0] > 0 else None

        return wait_until(current, timeout, f"a leader for {topic}-{partition}", interval=0.5)

    def isr(self, topic: str) -> dict[int, list[int]]:
        """partition → ISR as ZooKeeper holds it ({} when it does not answer): see :mod:`.zkview`."""
        return {p: isr for p, (_, isr) in self.zk.states(topic).items()}

    def full_isr(self, topic: str, partitions: int) -> bool:
        state = self.zk.states(topic)
        return len(state) == partitions and all(len(isr) == 3 and leader > 0 for leader, isr in state.values())

    def create_topic(self, name: str, partitions: int, configs: dict[str, str]) -> None:
        from confluent_kafka.admin import NewTopic

        admin = self._admin()  # kept alive until the result is in
        admin.create_topics([NewTopic(name, partitions, 3, config=configs)])[name].result(60)
        wait_until(lambda: self.full_isr(name, partitions), 60, f"{name} online with full ISRs", interval=0.5)

    # ------------------------------------------------------------------ one row

    def run_row(self, name: str, expectation: str, fault: Callable[[RowResult], Callable[[], None]],
                hold: float | None = None) -> RowResult:
        """Applies ``fault`` (which returns its heal), holds, heals, waits for full ISRs and progress."""
        assert self.producer is not None
        row = RowResult(name, expectation)
        row.started = time.monotonic()
        self.say(f"--- {name}: {expectation}")
        try:
            heal = fault(row)
            self.hold_sampling(row, self.hold if hold is None else hold)
            heal()
            row.healed = time.monotonic()
            try:
                wait_until(lambda: self.full_isr(TOPIC, self.partitions), 180, "every ISR full", interval=0.5)
                row.isr_full_after = time.monotonic() - row.healed
            except TimeoutError as exc:
                row.notes.append(str(exc))
            for p in range(self.partitions):
                self.producer.wait_acks(20, 120, after=time.monotonic(), partition=p)
        except Exception as exc:  # noqa: BLE001 - recorded in the row, the run goes on healed
            row.error = f"{type(exc).__name__}: {exc}"
            self.say(f"{name}: {row.error}")
            self.heal_everything()
        row.ended = time.monotonic()
        for p in range(self.partitions):
            row.gaps[p] = self.producer.max_gap(row.started, row.ended, p)[0]
        row.ack_p99_ms = ack_p99_ms(self.producer.attempts, row.started, row.ended)
        self.say(f"{name}: healed after {row.healed - row.started:.1f} s; ISR full "
                 f"{'never' if row.isr_full_after is None else f'{row.isr_full_after:.1f} s'} later; "
                 f"longest without ack {max(row.gaps.values()):.1f} s; ack p99 "
                 f"{'-' if row.ack_p99_ms is None else f'{row.ack_p99_ms:.0f} ms'}" + "".join(f"; {n}" for n in row.notes))
        self.results.append(row)
        return row

    def hold_sampling(self, row: RowResult, seconds: float) -> None:
        """Sleeps ``seconds`` while counting, per partition, the times its ISR got smaller."""
        start = time.monotonic()
        last = {p: len(isr) for p, isr in self.isr(TOPIC).items()}
        while (left := start + seconds - time.monotonic()) > 0:
            time.sleep(min(1.0, left))
            for p, isr in self.isr(TOPIC).items():
                if p in last and len(isr) < last[p]:
                    row.isr_shrinks[p] = row.isr_shrinks.get(p, 0) + 1
                last[p] = len(isr)
        row.held = time.monotonic() - start

    def heal_everything(self) -> None:
        try:
            self.net.heal_all()
        except Exception as exc:  # noqa: BLE001 - a stopped container has no rules left
            self.say(f"heal: {exc}")
        for service in (*ZOOKEEPERS, *BROKERS):
            status, _ = self.cluster.state(service)
            if status == "paused":
                self.cluster.unpause(service)
            elif status in ("exited", "created"):
                self.cluster.start(service)
        self.cluster.wait_healthy(timeout=180)

    # ------------------------------------------------------------------ the faults

    def service_of(self, broker_id: int) -> str:
        return BROKERS[broker_id - 1]

    def _kill(self, row: RowResult, services: tuple[str, ...], what: str) -> Callable[[], None]:
        """``docker kill`` of ``services``; the heal starts them again and waits until they are healthy."""
        row.notes.append(f"killed {what}")
        for service in services:
            self.cluster.kill(service)

        def heal() -> None:
            for service in services:
                self.cluster.start(service)
            self.cluster.wait_healthy(services, timeout=180)
        return heal

    def kill_leader(self, row: RowResult) -> Callable[[], None]:
        service = self.service_of(self.leader(TOPIC))
        return self._kill(row, (service,), service)

    def no_fast_path(self, row: RowResult, leader: int, since: float) -> None:
        """A leader frozen or cut off still holds its port and never refuses a connection, so the
        controller's fast path (mafka.controller.fast_failover) must not move it: only its session
        expiry may.  Watches the leader for 70 % of the session timeout and fails the row if it moved."""
        until = since + 0.7 * self.session_timeout_s
        while (left := until - time.monotonic()) > 0:
            state = self.zk.states(TOPIC).get(0)  # ZooKeeper's view: no broker (cut or frozen) in the way
            current = leader if state is None else state[0]
            if current != leader:
                raise AssertionError(f"partition 0's leader moved from {leader} to {current} after "
                                     f"{time.monotonic() - since:.1f} s, before the {self.session_timeout_s:.0f} s "
                                     "session could expire: the fast path fired for a broker that was alive")
            time.sleep(min(0.2, left))
        row.notes.append(f"leader kept {0.7 * self.session_timeout_s:.1f} s (no fast path)")

    def pause_leader(self, row: RowResult) -> Callable[[], None]:
        leader = self.leader(TOPIC)
        service = self.service_of(leader)
        row.notes.append(f"paused {service}")
        self.cluster.pause(service)
        self.no_fast_path(row, leader, time.monotonic())
        return lambda: self.cluster.unpause(service)

    def restart_broker(self, row: RowResult) -> Callable[[], None]:
        service = self.service_of(self.leader(TOPIC))
        row.notes.append(f"restarted {service}")
        self.cluster.restart(service, stop_timeout=30, timeout=120)
        return lambda: self.cluster.wait_healthy((service,), timeout=120)

    def isolate_broker(self, row: RowResult) -> Callable[[], None]:
        leader = self.leader(TOPIC)
        service = self.service_of(leader)
        row.notes.append(f"isolated {service}")
        others = [s for s in (*ZOOKEEPERS, *BROKERS) if s != service]
        self.net.isolate(service, others, host=True)
        self.no_fast_path(row, leader, time.monotonic())  # (a failure is healed by run_row)
        return lambda: self.net.heal(service)

    def leader_cut_from_zookeeper(self, row: RowResult) -> Callable[[], None]:
        service = self.service_of(self.leader(TOPIC))
        row.notes.append(f"{service} cut from ZooKeeper")
        self.net.isolate(service, list(ZOOKEEPERS))
        return lambda: self.net.heal(service)

    def follower_cut_from_leader(self, row: RowResult) -> Callable[[], None]:
        leader, replicas, _ = self.partition_state(TOPIC)[0]
        follower = next(r for r in replicas if r != leader)
        service, leader_service = self.service_of(follower), self.service_of(leader)
        row.notes.append(f"{service} cut from {leader_service}")
        self.net.isolate(service, [leader_service])
        cut_at = time.monotonic()
        try:
            wait_until(lambda: follower not in self.isr(TOPIC).get(0, [follower]),
                       self.replica_lag_s * 3 + 10, f"broker {follower} out of partition 0's ISR", interval=0.5)
            row.notes.append(f"ISR shrank after {time.monotonic() - cut_at:.1f} s")
        except TimeoutError as exc:
            row.notes.append(str(exc))
            row.error = "the ISR did not shrink"
        return lambda: self.net.heal(service)

    def isolate_zookeeper_node(self, row: RowResult) -> Callable[[], None]:
        service = ZOOKEEPERS[0]
        row.notes.append(f"isolated {service}")
        self.net.isolate(service, [s for s in (*ZOOKEEPERS, *BROKERS) if s != service])
        return lambda: self.net.heal(service)

    def controller(self) -> int:
        def current() -> int | None:
            try:
                admin = self._admin()
                cid = admin.list_topics(timeout=5).controller_id
            except Exception:  # noqa: BLE001 - nobody answered yet
                return None
            return cid if cid > 0 else None

        return wait_until(current, 60, "a controller", interval=0.5)

    def kill_controller(self, row: RowResult) -> Callable[[], None]:
        service = self.service_of(self.controller())
        return self._kill(row, (service,), f"the controller {service}")

    def kill_all_brokers(self, row: RowResult) -> Callable[[], None]:
        return self._kill(row, BROKERS, "kafka1, kafka2, kafka3 together")

    def leader_cut_from_clients(self, row: RowResult) -> Callable[[], None]:
        service = self.service_of(self.leader(TOPIC))
        row.notes.append(f"{service} cut from the host's clients only")
        self.net.isolate(service, [], host=True)
        return lambda: self.net.heal(service)

    def zookeeper_quorum_lost(self, row: RowResult) -> Callable[[], None]:
        cut = list(ZOOKEEPERS[1:])
        row.notes.append(f"{' and '.join(cut)} isolated: no ZooKeeper quorum")
        for service in cut:
            self.net.isolate(service, [s for s in (*ZOOKEEPERS, *BROKERS) if s != service])

        def heal() -> None:
            for service in cut:
                self.net.heal(service)
            self.cluster.wait_healthy(ZOOKEEPERS, timeout=120)
        return heal

    def zookeeper_leader(self) -> str:
        """The ensemble member whose ``srvr`` says ``Mode: leader``."""
        def current() -> str | None:
            for service in ZOOKEEPERS:
                r = self.cluster.exec(service, "sh", "-c", "echo srvr | nc -w 2 127.0.0.1 2181")
                if "Mode: leader" in r.stdout:
                    return service
            return None

        return wait_until(current, 60, "a ZooKeeper leader", interval=1.0)

    def kill_zookeeper_leader(self, row: RowResult) -> Callable[[], None]:
        service = self.zookeeper_leader()
        row.notes.append(f"killed the ZooKeeper leader {service}")
        self.cluster.kill(service)

        def heal() -> None:
            self.cluster.start(service)
            self.cluster.wait_healthy(ZOOKEEPERS, timeout=120)
        return heal

    def leader_deaf_to_followers(self, row: RowResult) -> Callable[[], None]:
        """One way: the leader receives nothing from its followers (their fetches), but can send."""
        leader, replicas, _ = self.partition_state(TOPIC)[0]
        service = self.service_of(leader)
        followers = [self.service_of(r) for r in replicas if r != leader]
        row.notes.append(f"{service} drops what {' and '.join(followers)} send it")
        self.net.deafen(service, followers)
        return lambda: self.net.heal(service)

    def rolling_restart(self, row: RowResult) -> Callable[[], None]:
        for service in BROKERS:
            self.cluster.restart(service, stop_timeout=30, timeout=120)
            self.cluster.wait_healthy((service,), timeout=120)
            wait_until(lambda: self.full_isr(TOPIC, self.partitions), 180, "every ISR full", interval=0.5)
        row.notes.append("restarted kafka1, kafka2, kafka3 in turn")
        return lambda: None

    def lossy_leader(self, row: RowResult) -> Callable[[], None]:
        service = self.service_of(self.leader(TOPIC))
        row.notes.append(f"{service} drops 5 % of its packets both ways")
        row.max_shrinks_per_min = 2.0
        self.net.lossy(service, 0.05)
        return lambda: self.net.heal(service)

    def slow_leader_link(self, row: RowResult) -> Callable[[], None]:
        service = self.service_of(self.leader(TOPIC))
        row.notes.append(f"{service} sends at {SLOW_LINK[0]}, queueing up to {SLOW_LINK[1]} ms")
        self.net.throttle(service, *SLOW_LINK)
        return lambda: self.net.heal(service)

    def registered_brokers(self) -> list[int] | None:
        """``/brokers/ids`` as ZooKeeper holds it, read with kazoo inside a running broker container."""
        script = ("from kazoo.client import KazooClient; import os\n"
                  "zk = KazooClient(hosts=os.environ['KAFKA_ZOOKEEPER_CONNECT'], timeout=5)\n"
                  "zk.start(timeout=10); print(','.join(sorted(zk.get_children('/brokers/ids')))); zk.stop()")
        for service in BROKERS:
            if self.cluster.state(service)[0] != "running":
                continue
            r = self.cluster.exec(service, "python3", "-c", script, timeout=30)
            if r.returncode == 0:
                return sorted(int(x) for x in r.stdout.strip().split(",") if x)
        return None

    def zookeeper_rolling_restart(self, row: RowResult) -> Callable[[], None]:
        for service in ZOOKEEPERS:
            restarted = time.monotonic()
            self.cluster.restart(service, stop_timeout=10, timeout=120)
            self.cluster.wait_healthy(ZOOKEEPERS, timeout=120)
            wait_until(lambda: self.registered_brokers() == [1, 2, 3], 120, "brokers 1, 2, 3 under /brokers/ids",
                       interval=1.0)
            row.notes.append(f"{service}: /brokers/ids = [1, 2, 3] {time.monotonic() - restarted:.1f} s "
                             f"after its restart began")
        return lambda: None

    def group_coordinator(self) -> int:
        """The broker leading the group's ``__consumer_offsets`` partition."""
        from mafka.group.offsets_records import offsets_partition_for

        assert self.group is not None
        partition = offsets_partition_for(self.group.name, 50)
        return self.leader("__consumer_offsets", partition)

    def kill_group_coordinator(self, row: RowResult) -> Callable[[], None]:
        service = self.service_of(self.group_coordinator())
        return self._kill(row, (service,), f"the group coordinator {service}")

    def kill_group_member(self, row: RowResult) -> Callable[[], None]:
        assert self.group is not None
        live = self.group.group.live()
        if not live:
            raise RuntimeError("no live group member to kill")
        victim = live[0]
        row.notes.append(f"SIGKILLed member {victim.name} (held {victim.assignment()})")
        victim.kill()
        return lambda: None

    # ------------------------------------------------------------------ the consumer group

    def start_group(self) -> None:
        """Starts the group's members once its coordinator is up and they share the partitions."""
        assert self.group_log_dir is not None
        self.group_log_dir.mkdir(parents=True, exist_ok=True)
        self.group = GroupUnderChaos("confluent", self.cluster.bootstrap, TOPIC, self.partitions,
                                     self.group_log_dir, session_timeout_ms=int(self.session_timeout_s * 1000),
                                     acks=lambda: list(self.producer.acks) if self.producer else [],
                                     say=self.say)
        read_committed(self.cluster.bootstrap, self.group.name, TOPIC, self.partitions, timeout=90)
        self.group.start()
        self.say(f"group {self.group.name}: {self.group.wait_balanced(90)}")

    def finish_group(self, got: Drain) -> GroupReport:
        assert self.group is not None and self.producer is not None
        acked = {(a.partition, a.offset): a.value for a in self.producer.attempts if a.status == ACKED}
        ends = dict(got.high_watermarks)
        done = self.group.wait_done(acked, ends, 300)
        end = time.monotonic()
        self.say(f"group: {'caught up' if done else 'NOT caught up'}; missing {len(self.group.missing(acked))}, "
                 f"last commits {self.group.last_committed()}, ends {ends}")
        self.group.stop()
        final: dict[int, int] | None = None
        error: str | None = None
        try:
            final = read_committed(self.cluster.bootstrap, self.group.name, TOPIC, self.partitions, timeout=60)
        except TimeoutError as exc:
            error = str(exc)
        self.group_report = check_group(self.group, self.producer.attempts, got.records, ends, final, error, done,
                                        self.t0, end)
        self.say(f"group: {'PASS' if self.group_report.ok else 'FAIL'}")
        return self.group_report

    # ------------------------------------------------------------------ the negative control

    def negative_control(self) -> RowResult:
        """Unclean election after the ISR shrank to a leader that is then lost: loss must be reported."""
        row = RowResult("negative-control", "unclean election on, min ISR 1: the checker must report loss",
                        must_lose=True)
        row.started = time.monotonic()
        self.say(f"--- {row.name}: {row.expectation}")
        self.create_topic(CONTROL_TOPIC, 1, {"unclean.leader.election.enable": "true", "min.insync.replicas": "1"})
        # Two producers: an idempotent one cannot go on after an unclean election (the new
        # leader does not know its sequences: a fatal OUT_OF_ORDER_SEQUENCE_NUMBER).
        producers: list[ContinuousProducer] = []
        try:
            before = ContinuousProducer(self.cluster.bootstrap, CONTROL_TOPIC, partitions=1, rate=self.rate,
                                        tag="control-before").start()
            producers.append(before)
            before.wait_acks(50, 60)
            leader, replicas, _ = self.partition_state(CONTROL_TOPIC)[0]
            service = self.service_of(leader)
            followers = [self.service_of(r) for r in replicas if r != leader]
            self.net.isolate(service, followers)
            cut_at = time.monotonic()
            wait_until(lambda: self.isr(CONTROL_TOPIC).get(0) == [leader],
                       self.replica_lag_s * 3 + 10, "the control ISR shrunk to its leader", interval=0.5)
            shrunk = time.monotonic()
            row.notes.append(f"ISR = [{leader}] after {shrunk - cut_at:.1f} s")
            before.wait_acks(100, 60, after=shrunk)  # acknowledged by the leader alone
            before.stop(flush_timeout=10)
            self.cluster.kill(service)  # its network namespace, and the cut, go with it
            self.net.cut.discard(service)

            def unclean_leader() -> int | None:
                state = self.partition_state(CONTROL_TOPIC).get(0)
                return state[0] if state is not None and state[0] not in (-1, leader) else None

            new = wait_until(unclean_leader, self.session_timeout_s * 3 + 30, "an unclean leader", interval=0.5)
            row.notes.append(f"broker {new} elected uncleanly")
            after = ContinuousProducer(self.cluster.bootstrap, CONTROL_TOPIC, partitions=1, rate=self.rate,
                                       tag="control-after").start()
            producers.append(after)
            after.wait_acks(50, 60)  # new writes take the offsets the old leader had used
            after.stop(flush_timeout=10)
            self.cluster.start(service)
            self.cluster.wait_healthy((service,), timeout=120)
            row.healed = time.monotonic()
            wait_until(lambda: self.full_isr(CONTROL_TOPIC, 1), 120, "the control ISR full", interval=0.5)
            row.isr_full_after = time.monotonic() - row.healed
        except Exception as exc:  # noqa: BLE001 - recorded in the row
            row.error = f"{type(exc).__name__}: {exc}"
            self.say(f"{row.name}: {row.error}")
            self.heal_everything()
        finally:
            for p in producers:
                if p.stopped_at is None:
                    p.stop(flush_timeout=10)
        row.ended = time.monotonic()
        got = drain(self.cluster.bootstrap, CONTROL_TOPIC, 1, timeout=120)
        report = check_delivery([a for p in producers for a in p.attempts], got.records)
        row.lost, row.duplicates = len(report.lost), len(report.duplicates)
        row.gaps[0] = max((p.max_gap(row.started, row.ended, 0)[0] for p in producers), default=0.0)
        row.notes.append(report.summary().splitlines()[1])
        self.say(f"{row.name}: {report.summary()}")
        self.results.append(row)
        return row

    # ------------------------------------------------------------------ the whole run

    def run(self, rows: list[str]) -> list[RowResult]:
        self.zk.start()
        try:
            return self._run(rows)
        finally:
            self.zk.close()

    def _run(self, rows: list[str]) -> list[RowResult]:
        self.create_topic(TOPIC, self.partitions, {"min.insync.replicas": "2"})
        self.producer = ContinuousProducer(self.cluster.bootstrap, TOPIC, partitions=self.partitions,
                                           rate=self.rate, tag="chaos").start()
        try:
            self.producer.wait_acks(100, 60)
            if self.group_log_dir is not None:
                self.start_group()
            for name in rows:
                if name == "negative-control":
                    continue
                expectation, fault, hold = ROWS[name]
                self.run_row(name, expectation, getattr(self, fault), None if hold is None else hold(self))
        finally:
            self.producer.stop()
        got = self.attribute_violations()
        if self.group is not None:
            try:
                self.finish_group(got)
            finally:
                self.group.close()
        if "negative-control" in rows:
            self.negative_control()
        return self.results

    def attribute_violations(self) -> Drain:
        """The final drain and check; each lost or duplicated value counts for the row it was acknowledged in."""
        assert self.producer is not None
        got = drain(self.cluster.bootstrap, TOPIC, self.partitions, timeout=180)
        report = check_delivery(self.producer.attempts, got.records)
        self.say(f"delivery over the whole run: {report.summary()}")
        by_value = {a.value: a for a in self.producer.attempts}
        for value in report.lost:
            self._row_at(by_value[value].acked_at).lost += 1
        for value in report.duplicates:
            a = by_value.get(value)
            self._row_at(a.acked_at if a is not None and a.status == ACKED else None).duplicates += 1
        if not got.complete:
            self.say("the final drain did not reach every high watermark")
            for r in self.results:
                r.notes.append("final drain incomplete")
                r.error = r.error or "final drain incomplete"
        return got

    def _row_at(self, t: float | None) -> RowResult:
        if t is not None:
            for r in self.results:
                if r.started <= t <= r.ended:
                    return r
        # between rows (or unknown): the row that ran before it
        before = [r for r in self.results if t is not None and r.started <= t]
        return before[-1] if before else self.results[0]


def _lag_hold(chaos: DockerChaos) -> float:
    return chaos.hold + chaos.replica_lag_s


def _session_hold(chaos: DockerChaos) -> float:
    return max(chaos.hold, chaos.session_timeout_s * 2 + 2)


#: row name → (expectation, DockerChaos method, hold (None: the default))
ROWS: dict[str, tuple[str, str, Callable[[DockerChaos], float] | None]] = {
    "kill-leader": ("0 lost, 0 dup; a new leader within the session timeout", "kill_leader", None),
    "pause-leader": ("0 lost, 0 dup; the zombie acks nothing and rejoins", "pause_leader", _session_hold),
    "restart-broker": ("0 lost, 0 dup; controlled shutdown moves leadership first", "restart_broker", lambda c: 1.0),
    "isolate-broker": ("0 lost, 0 dup; the isolated leader acks nothing", "isolate_broker", _session_hold),
    "leader-cut-from-zookeeper": ("0 lost, 0 dup; the zombie leader is fenced", "leader_cut_from_zookeeper",
                                  _session_hold),
    "follower-cut-from-leader": ("0 lost, 0 dup; the ISR shrinks, writes go on, it rejoins",
                                 "follower_cut_from_leader", lambda c: c.hold),
    "isolate-zookeeper-node": ("0 lost, 0 dup; the ensemble keeps its quorum", "isolate_zookeeper_node", None),
    "kill-controller": ("0 lost, 0 dup; a new controller takes over", "kill_controller", None),
    "leader-cut-from-clients": ("0 lost, 0 dup; writes to its partitions wait, then resume",
                                "leader_cut_from_clients", None),
    "zookeeper-quorum-lost": ("0 lost, 0 dup; brokers keep serving, recover when ZooKeeper returns",
                              "zookeeper_quorum_lost", None),
    "kill-all-brokers": ("0 lost, 0 dup; every partition back online", "kill_all_brokers", None),
    "kill-zookeeper-leader": ("0 lost, 0 dup; the ensemble elects another leader", "kill_zookeeper_leader", None),
    "leader-deaf-to-followers": ("0 lost, 0 dup; one-way cut: the ISR shrinks to the leader, acks=all "
                                 "writes wait (min ISR 2) until the heal", "leader_deaf_to_followers", _lag_hold),
    "rolling-restart": ("0 lost, 0 dup; every broker restarted under load", "rolling_restart", lambda c: 1.0),
    "lossy-leader": ("0 lost, 0 dup; at most 2 ISR shrinks per minute per partition", "lossy_leader",
                     lambda c: max(c.hold, 30.0)),
    "slow-leader-link": ("0 lost, 0 dup; writes slow down but go on", "slow_leader_link",
                         lambda c: max(c.hold, 30.0)),
    "zookeeper-rolling-restart": ("0 lost, 0 dup; every broker registered again after each ZooKeeper restart",
                                  "zookeeper_rolling_restart", lambda c: 1.0),
    "kill-group-coordinator": ("0 lost, 0 dup; the group moves to a new coordinator and goes on",
                               "kill_group_coordinator", None),
    "kill-group-member": ("0 lost, 0 dup; the member's partitions move to the others", "kill_group_member", None),
}
