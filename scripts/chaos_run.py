#!/usr/bin/env python3
"""A longer randomized fault run against a local 3-broker cluster (``make chaos``).

Starts ZooKeeper and the brokers (``tests/harness/cluster.py``), creates
an RF 3 topic with ``min.insync.replicas=2`` and unclean election off, runs
an idempotent acks=all confluent-kafka producer for ``--duration`` seconds
(default 300) while one fault at a time is injected at random, every
``--interval`` seconds:

* ``kill-leader``  SIGKILL a partition leader, restart it 1–5 s later (half of
  the time only once its ZooKeeper registration has expired);
* ``kill-controller``  the same for the controller;
* ``kill-any``  the same for a random broker;
* ``pause-short``  SIGSTOP a random broker for 1–3 s;
* ``pause-long``  SIGSTOP a random broker (a leader half the time) past the
  ZooKeeper session timeout — a zombie;
* ``terminate``  SIGTERM (controlled shutdown) a random broker, then restart it.

Meanwhile a consumer group (``tests/harness/group_chaos.py``; 3
confluent-kafka members by default, ``--group-client`` for kafka-python or
aiokafka, each committing offset+1 synchronously after every message,
session.timeout.ms 6000) consumes the topic; member processes that exit or get
stuck are restarted.  ``--no-group`` runs without it.  Two more faults aim at
the group's coordinator (the leader of its ``__consumer_offsets`` partition),
only when named in ``--faults``: ``kill-coordinator`` (as kill-leader) and
``pause-coordinator`` (SIGSTOP past the session timeout).

After each fault it heals (SIGCONT / restart) and waits, bounded, for the ISR
to be full again.  At the end it heals everything, lets the producer drain,
reads every partition from offset 0 to its high watermark and runs the
checkers (``tests/harness/checker.py``): lost / duplicated / reordered
acknowledged writes, offsets that differ from the acknowledged ones,
unexpected values, and byte identity of every partition's replicas.  Then it
waits until the group consumed every acknowledged value and committed the end
of every partition, and checks the group: at-least-once (every acknowledged
(partition, offset, value) consumed at that offset with that value), the commit
floor (no successful commit below the highest commit acknowledged before the
committer was assigned the partition) and the committed offsets read back
(OffsetFetch) equal to the partition ends; with figures (rebalances, longest
time a partition was unowned, re-deliveries, commit failures by error).  Prints a
summary; exits 1 on any violation (0 otherwise, 2 if the cluster could not be
set up).

``--eos`` runs the exactly-once run instead (``tests/harness/txn_chaos.py``;
``make chaos`` runs it after this one): a transactional consume-transform-produce
app (``--eos-members`` member processes, KIP-447: one transactional id per member,
offsets sent with the group metadata) copies topic A, filled at ``--rate`` by an
idempotent producer, to topic B while the transaction coordinators, the group
coordinator, leaders of A and B, the controller and the member processes are
killed and frozen (``--faults``: a subset of txn_chaos.FAULTS, default all;
``--duration`` 180 s by default).  At the end B, read with read_committed, must
hold every record of A exactly once, in order per partition; B read with
read_uncommitted must show the copies of the transactions the app aborted on
purpose (every ``--abort-every``-th) as duplicates — the negative control.

Example: ``.venv/bin/python scripts/chaos_run.py --duration 120 --seed 7``,
``.venv/bin/python scripts/chaos_run.py --eos --duration 60``.
"""

from __future__ import annotations

import argparse
import logging
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.harness.chaos import Chaos, ContinuousProducer, Drain, create_topic, drain  # noqa: E402
from tests.harness.checker import ACKED, check_delivery  # noqa: E402
from tests.harness.cluster import LocalCluster  # noqa: E402
from tests.harness.group_chaos import GroupReport, GroupUnderChaos, check_group, read_committed  # noqa: E402
from tests.harness.txn_chaos import FAULTS as EOS_FAULTS  # noqa: E402
from tests.harness.txn_chaos import EosSettings, cluster_settings, run_eos  # noqa: E402

FAULTS = ("kill-leader", "kill-controller", "kill-any", "pause-short", "pause-long", "terminate")
#: only when named in --faults (and with a group)
GROUP_FAULTS = ("kill-coordinator", "pause-coordinator")
OFFSETS_TOPIC = "__consumer_offsets"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--duration", type=float, default=None, help="seconds of faults (default 300; 180 with --eos)")
    p.add_argument("--interval", type=float, nargs=2, default=None, metavar=("MIN", "MAX"),
                   help="quiet seconds between a healed fault and the next one (default 5 10; 3 6 with --eos)")
    p.add_argument("--seed", type=int, default=None, help="random seed (default: time)")
    p.add_argument("--partitions", type=int, default=3)
    p.add_argument("--replication-factor", type=int, default=3, choices=(1, 2, 3),
                   help="of the topic (default 3; min.insync.replicas is min(2, RF))")
    p.add_argument("--rate", type=float, default=None, help="messages per second (default 200; 100 with --eos)")
    p.add_argument("--faults", default=None, help=f"comma-separated subset of {','.join(FAULTS)} (default: all of these), "
                        f"plus {','.join(GROUP_FAULTS)} (the group's coordinator; only when named); with --eos a "
                        f"subset of {','.join(EOS_FAULTS)} (default: all)")
    p.add_argument("--session-timeout-ms", type=int, default=6000)
    p.add_argument("--replica-lag-time-max-ms", type=int, default=10000)
    p.add_argument("--dir", type=Path, default=None, help="cluster directory (default: a temporary one)")
    p.add_argument("--keep", action="store_true", help="keep the cluster directory (always kept on failure)")
    p.add_argument("--verbose", action="store_true", help="show librdkafka's connection log")
    p.add_argument("--no-group", action="store_true", help="run without the consumer group")
    p.add_argument("--group-client", choices=("confluent", "kafka-python", "aiokafka"), default="confluent",
                   help="client of the group members (default confluent)")
    p.add_argument("--group-members", type=int, default=3, help="live group members to keep (default 3)")
    p.add_argument("--group-session-timeout-ms", type=int, default=6000)
    p.add_argument("--group-stuck", type=float, default=45.0, metavar="SECONDS",
                   help="restart a member holding a partition with acknowledged values unconsumed this long "
                        "(default 45)")
    p.add_argument("--group-timeout", type=float, default=300.0,
                   help="seconds to wait after the run for the group to consume and commit everything (default 300)")
    p.add_argument("--eos", action="store_true", help="the exactly-once run (see above) instead")
    p.add_argument("--eos-members", type=int, default=3, help="app member processes with --eos (default 3)")
    p.add_argument("--abort-every", type=int, default=10,
                   help="with --eos, each member aborts every n-th transaction on purpose (default 10)")
    p.add_argument("--eos-debug", default="", metavar="CONTEXTS",
                   help="with --eos, librdkafka debug contexts for the members' logs (e.g. eos,cgrp)")
    args = p.parse_args(argv)
    args.duration = args.duration if args.duration is not None else (180.0 if args.eos else 300.0)
    args.interval = args.interval if args.interval is not None else ((3.0, 6.0) if args.eos else (5.0, 10.0))
    args.rate = args.rate if args.rate is not None else (100.0 if args.eos else 200.0)
    args.faults = [f for f in (args.faults or ",".join(EOS_FAULTS if args.eos else FAULTS)).split(",") if f]
    if args.eos:
        unknown = set(args.faults) - set(EOS_FAULTS)
        if unknown:
            p.error(f"unknown --eos faults {sorted(unknown)}")
        return args
    unknown = set(args.faults) - set(FAULTS) - set(GROUP_FAULTS)
    if unknown:
        p.error(f"unknown faults {sorted(unknown)}")
    if args.no_group and set(args.faults) & set(GROUP_FAULTS):
        p.error(f"{sorted(set(args.faults) & set(GROUP_FAULTS))} need the group")
    return args


class Run:
    def __init__(self, args: argparse.Namespace, cluster: LocalCluster, chaos: Chaos, topic: str) -> None:
        self.args = args
        self.cluster = cluster
        self.chaos = chaos
        self.topic = topic
        self.rng = random.Random(args.seed)
        self.log: list[str] = []
        self.t0 = time.monotonic()
        self.unhealed: list[str] = []
        #: the group's __consumer_offsets partition (None without a group)
        self.offsets_partition: int | None = None

    def coordinator(self) -> int:
        assert self.offsets_partition is not None
        c = self.chaos.leader(OFFSETS_TOPIC, self.offsets_partition)
        return c if c > 0 else self.pick_broker()

    def say(self, text: str) -> None:
        line = f"[{time.monotonic() - self.t0:7.1f}s] {text}"
        self.log.append(line)
        print(line, flush=True)

    def pick_broker(self) -> int:
        return self.rng.choice(self.chaos.broker_ids)

    def pick_leader(self) -> int:
        p = self.rng.randrange(self.args.partitions)
        leader = self.chaos.leader(self.topic, p)
        return leader if leader > 0 else self.pick_broker()

    def kill_restart(self, broker: int, why: str) -> None:
        down = self.rng.uniform(1.0, 5.0)
        expiry = self.rng.random() < 0.5
        self.say(f"{why}: SIGKILL broker {broker}, restart after {down:.1f} s"
                 + (" and its registration expired" if expiry else " (its dead session may still hold the id)"))
        self.chaos.kill(broker)
        self.chaos.restart(broker, min_down=down, timeout=90, wait_expiry=expiry)

    def fault(self, name: str) -> None:
        ch = self.chaos
        if name == "kill-leader":
            self.kill_restart(self.pick_leader(), name)
        elif name == "kill-controller":
            c = ch.controller()
            self.kill_restart(c if c > 0 else self.pick_broker(), name)
        elif name == "kill-any":
            self.kill_restart(self.pick_broker(), name)
        elif name == "pause-short":
            b, secs = self.pick_broker(), self.rng.uniform(1.0, 3.0)
            self.say(f"{name}: SIGSTOP broker {b} for {secs:.1f} s")
            ch.pause(b)
            time.sleep(secs)
            ch.resume(b)
        elif name == "pause-long":
            b = self.pick_leader() if self.rng.random() < 0.5 else self.pick_broker()
            secs = ch.session_timeout_s + self.rng.uniform(2.0, 4.0)
            self.say(f"{name}: SIGSTOP broker {b} for {secs:.1f} s (past the session timeout)")
            ch.pause(b)
            time.sleep(secs)
            ch.resume(b)
        elif name == "kill-coordinator":
            self.kill_restart(self.coordinator(), name)
        elif name == "pause-coordinator":
            b = self.coordinator()
            secs = ch.session_timeout_s + self.rng.uniform(2.0, 4.0)
            self.say(f"{name}: SIGSTOP broker {b} for {secs:.1f} s (past the session timeout)")
            ch.pause(b)
            time.sleep(secs)
            ch.resume(b)
        elif name == "terminate":
            b = self.pick_broker()
            self.say(f"{name}: SIGTERM broker {b} (controlled shutdown), then restart")
            ch.terminate(b)
            ch.restart(b, timeout=90)

    def heal(self) -> None:
        try:
            self.chaos.heal(timeout=90)
            self.chaos.wait_full_isr(self.topic, range(self.args.partitions), timeout=90)
            if self.offsets_partition is not None:
                self.chaos.wait_full_isr(OFFSETS_TOPIC, [self.offsets_partition], timeout=90)
        except TimeoutError as exc:
            self.unhealed.append(f"{time.monotonic() - self.t0:.0f}s: {exc}")
            self.say(f"not healed in time: {exc}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.eos:
        return main_eos(args)
    client_log = logging.getLogger("chaos.producer")
    client_log.propagate = False
    client_log.addHandler(logging.StreamHandler() if args.verbose else logging.NullHandler())
    if args.seed is None:
        args.seed = int(time.time())
    base = args.dir.resolve() if args.dir else Path(tempfile.mkdtemp(prefix="mafka-chaos-"))
    base.mkdir(parents=True, exist_ok=True)
    settings = {
        "zookeeper.session.timeout.ms": str(args.session_timeout_ms),
        "replica.lag.time.max.ms": str(args.replica_lag_time_max_ms),
        "min.insync.replicas": "2",
        "unclean.leader.election.enable": "false",
        "default.replication.factor": "3",
    }
    print(f"chaos run: seed {args.seed}, {args.duration:.0f} s of {', '.join(args.faults)}; cluster in {base}/cluster",
          flush=True)
    cluster = LocalCluster(base / "cluster", brokers=3, settings=settings)
    try:
        cluster.start()
    except (RuntimeError, TimeoutError) as exc:
        print(f"the cluster did not start: {exc}", file=sys.stderr)
        return 2
    chaos = Chaos(cluster)
    failed = True
    group: GroupUnderChaos | None = None
    try:
        topic = create_topic(cluster, partitions=args.partitions, rf=args.replication_factor, chaos=chaos,
                             configs={"min.insync.replicas": str(min(2, args.replication_factor)),
                                      "unclean.leader.election.enable": "false"})
        run = Run(args, cluster, chaos, topic)
        producer = ContinuousProducer(cluster.bootstrap, topic, partitions=args.partitions, rate=args.rate).start()
        counts: dict[str, int] = dict.fromkeys(args.faults, 0)
        try:
            producer.wait_acks(min(100, int(args.rate)), 60)
            run.say(f"topic {topic}: producing at {args.rate:.0f} msg/s")
            if not args.no_group:
                group = start_group(args, run, producer, base / "group")
            end = time.monotonic() + args.duration
            while time.monotonic() < end:
                name = run.rng.choice(args.faults)
                counts[name] += 1
                try:
                    run.fault(name)
                except TimeoutError as exc:
                    run.say(f"{name} did not complete: {exc}")
                run.heal()
                run.say(f"healed; acked so far {producer.acked()}"
                        + (f"; group consumed {len(group.group.consumed())}, live members "
                           f"{len(group.group.live())}" if group else ""))
                time.sleep(min(max(0.0, end - time.monotonic()), run.rng.uniform(*args.interval)))
            run.heal()
        finally:
            producer.stop(flush_timeout=90)
        got = drain(cluster.bootstrap, topic, args.partitions, timeout=120)
        report = check_delivery(producer.attempts, got.records)
        replicas = {p: chaos.wait_replicas_identical(topic, p, timeout=60) for p in range(args.partitions)}
        gaps = {p: producer.max_gap(run.t0, producer.stopped_at or time.monotonic(), partition=p) for p in range(args.partitions)}
        group_report = finish_group(args, run, group, producer, got) if group is not None else None

        print("\n==== chaos run summary ====")
        print(f"seed {args.seed}; faults: {', '.join(f'{k} ×{v}' for k, v in counts.items())}")
        print(report.summary())
        print(f"drain complete: {got.complete}; high watermarks {got.high_watermarks}")
        for p, r in replicas.items():
            print(f"replicas of {topic}-{p}: {r.summary()}")
        for p, (gap, _) in gaps.items():
            print(f"longest time without an ack on partition {p}: {gap:.1f} s")
        if producer.fatal:
            print(f"producer fatal error: {producer.fatal}")
        for line in run.unhealed:
            print(f"not healed: {line}")
        failed = (not report.ok or not got.complete or producer.fatal is not None
                  or not all(r.identical for r in replicas.values()))
        if group_report is not None:
            print("\n==== consumer group ====")
            print(group_report.summary(run.t0))
            print("GROUP:", "PASS" if group_report.ok else "FAIL",
                  f"(member logs in {base / 'group'})" if not group_report.ok or args.keep else "")
            failed = failed or not group_report.ok
        print("RESULT:", "FAIL" if failed else "PASS", f"(cluster dir {base}/cluster)" if failed or args.keep else "")
        return 1 if failed else 0
    finally:
        if group is not None:
            group.close()
        chaos.close()
        cluster.stop()
        if not failed and not args.keep and args.dir is None:
            shutil.rmtree(base, ignore_errors=True)


def main_eos(args: argparse.Namespace) -> int:
    """The exactly-once run on a cluster of its own (tests/harness/txn_chaos.py)."""
    client_log = logging.getLogger("chaos.producer")
    client_log.propagate = False
    client_log.addHandler(logging.StreamHandler() if args.verbose else logging.NullHandler())
    if args.seed is None:
        args.seed = int(time.time())
    base = args.dir.resolve() if args.dir else Path(tempfile.mkdtemp(prefix="mafka-chaos-eos-"))
    base.mkdir(parents=True, exist_ok=True)
    print(f"exactly-once chaos run: seed {args.seed}, {args.duration:.0f} s of {', '.join(args.faults)}; "
          f"cluster in {base}/cluster, app logs in {base}/app", flush=True)
    cluster = LocalCluster(base / "cluster", brokers=3, settings=cluster_settings(
        args.session_timeout_ms, args.replica_lag_time_max_ms))
    try:
        cluster.start()
    except (RuntimeError, TimeoutError) as exc:
        print(f"the cluster did not start: {exc}", file=sys.stderr)
        return 2
    settings = EosSettings(duration=args.duration, interval=tuple(args.interval), seed=args.seed, faults=args.faults,
                           partitions=args.partitions, members=args.eos_members, rate=args.rate,
                           abort_every=args.abort_every, session_timeout_ms=args.group_session_timeout_ms,
                           debug=args.eos_debug)
    failed = True
    try:
        result = run_eos(cluster, settings, base / "app")
        print()
        print(result.summary())
        failed = not result.ok
        print("RESULT:", "FAIL" if failed else "PASS", f"(cluster dir {base}/cluster, app logs {base}/app)"
              if failed or args.keep else "")
        return 1 if failed else 0
    finally:
        cluster.stop()
        if not failed and not args.keep and args.dir is None:
            shutil.rmtree(base, ignore_errors=True)


def start_group(args: argparse.Namespace, run: Run, producer: ContinuousProducer, log_dir: Path) -> GroupUnderChaos:
    """Creates __consumer_offsets (an OffsetFetch), waits for the group's offsets partition, starts the members."""
    from mafka.group.offsets_records import offsets_partition_for

    log_dir.mkdir(parents=True, exist_ok=True)
    group = GroupUnderChaos(args.group_client, run.cluster.bootstrap, run.topic, args.partitions, log_dir,
                            members=args.group_members, session_timeout_ms=args.group_session_timeout_ms,
                            stuck_s=args.group_stuck, acks=lambda: list(producer.acks), say=run.say)
    read_committed(run.cluster.bootstrap, group.name, run.topic, args.partitions, timeout=90)
    run.offsets_partition = offsets_partition_for(group.name, int(run.cluster.settings.get(
        "offsets.topic.num.partitions", "50")))
    run.chaos.wait_leader(OFFSETS_TOPIC, run.offsets_partition, timeout=60)
    run.chaos.wait_full_isr(OFFSETS_TOPIC, [run.offsets_partition], timeout=60)
    group.start()
    try:
        balanced = group.wait_balanced(60)
        run.say(f"group {group.name} ({args.group_client}, coordinator broker {run.coordinator()}, "
                f"{OFFSETS_TOPIC}-{run.offsets_partition}): {balanced}")
    except TimeoutError as exc:
        run.say(f"group {group.name}: not balanced within 60 s: {str(exc).splitlines()[0]}")
    return group


def finish_group(args: argparse.Namespace, run: Run, group: GroupUnderChaos, producer: ContinuousProducer,
                 got: Drain) -> GroupReport:
    """Waits for the group to consume every acknowledged value and commit every partition's end, stops the
    members, reads the committed offsets back and checks everything."""
    acked = {(a.partition, a.offset): a.value for a in producer.attempts if a.status == ACKED}
    ends = dict(got.high_watermarks)
    started = time.monotonic()
    run.say(f"group: waiting (up to {args.group_timeout:.0f} s) to consume {len(acked)} acknowledged values and "
            f"commit the ends {ends}")
    done = group.wait_done(acked, ends, args.group_timeout)
    end = time.monotonic()
    run.say(f"group: {'caught up' if done else 'NOT caught up'} after {end - started:.1f} s; "
            f"missing {len(group.missing(acked))}, last commits reported {group.last_committed()}")
    group.stop()
    final: dict[int, int] | None = None
    error: str | None = None
    try:
        final = read_committed(run.cluster.bootstrap, group.name, run.topic, args.partitions, timeout=60)
    except TimeoutError as exc:
        error = str(exc)
    return check_group(group, producer.attempts, got.records, ends, final, error, done, run.t0, end)


if __name__ == "__main__":
    sys.exit(main())
