"""Replication under process faults: no acknowledged write is lost (issue 5's chaos tests).

One 3-broker cluster for the module (real ZooKeeper, real broker processes)
with profile P of the reliability program: RF 3, ``min.insync.replicas=2``,
``unclean.leader.election.enable=false``, ``zookeeper.session.timeout.ms=6000``,
``replica.lag.time.max.ms=4000``; acks=all idempotent confluent-kafka
producers; a topic per test.  Faults come from :class:`~.chaos.Chaos`
(SIGKILL / SIGSTOP / SIGCONT / SIGTERM / restart), verdicts from
:mod:`.checker`: every acknowledged value read back exactly once, at its
acknowledged offset, in per-partition order, and afterwards the replicas of
every partition byte-identical.  Each test starts and ends with every broker
running and registered (the ``chaos`` fixture heals), and every wait is
bounded.  Figures (failover time, controlled-shutdown no-ack window) are
printed (``pytest -s``).

The negative control (:func:`test_negative_control_unclean_election_loses_acknowledged_writes`)
forces an unclean election and requires the same checker to report the loss.
"""

from __future__ import annotations

import threading
import time

import pytest

from mafka.errors import ErrorCode
from tests.harness.chaos import (
    Chaos,
    ContinuousProducer,
    create_topic,
    drain,
    explain,
    explained,
    final_check,
    healed,
    kill_leader,
    process_state,
    raw_produce,
    running,
)
from tests.harness.checker import ACKED, check_delivery, log_end_offset
from tests.harness.cluster import ClusterSpec, LocalCluster

pytestmark = pytest.mark.integration

SESSION_TIMEOUT_S = 6.0
LAG_TIME_MAX_S = 4.0
SETTINGS = {
    "zookeeper.session.timeout.ms": str(int(SESSION_TIMEOUT_S * 1000)),
    "replica.lag.time.max.ms": str(int(LAG_TIME_MAX_S * 1000)),
    "min.insync.replicas": "2",
    "unclean.leader.election.enable": "false",
    "default.replication.factor": "3",
    "auto.leader.rebalance.enable": "false",  # leaders move only when the tests move them
}
SAFE = {"min.insync.replicas": "2", "unclean.leader.election.enable": "false"}


CLUSTER = ClusterSpec(settings=SETTINGS, shared=False)  # kills, freezes and restarts brokers


@pytest.fixture(scope="module")
def cluster(cluster):
    """The module's cluster (``CLUSTER``), told whether acks=all works on it at all."""
    cluster.replication_problem = replication_problem(cluster)
    return cluster


def replication_problem(cluster: LocalCluster) -> str | None:
    """Why acks=all on an RF 3 topic does not work at all (then every test fails at once), or None."""
    topic = create_topic(cluster, partitions=1, rf=3, configs=SAFE)
    ch = Chaos(cluster)
    try:
        info = cluster.broker(ch.leader(topic, 0))
    finally:
        ch.close()
    code, _ = raw_produce(info["host"], info["port"], topic, 0, [b"probe"], acks=-1, timeout_ms=10000)
    if code != ErrorCode.NONE:
        return f"an acks=all produce to an RF 3 topic with a full ISR answered error {code} (is replication in place?)"
    return None


@pytest.fixture
def chaos(cluster):
    """A fault injector; every broker is running and registered before and after the test."""
    if cluster.replication_problem:
        pytest.fail(cluster.replication_problem)
    with healed(cluster) as ch:
        yield ch


# -- a) ----------------------------------------------------------------------------------------


def test_acknowledged_writes_survive_killing_leaders_and_the_controller(cluster, chaos):
    topic = create_topic(cluster, partitions=3, rf=3, configs={**SAFE, "segment.bytes": str(256 * 1024)}, chaos=chaos)
    with running(ContinuousProducer(cluster.bootstrap, topic, partitions=3, rate=150), chaos) as producer:
        producer.wait_acks(150, 30)
        first = kill_leader(chaos, producer, topic, 0)
        # then the leader of another partition (another broker, if there is one)
        other = next((p for p in (1, 2) if chaos.leader(topic, p) != first["victim"]), 1)
        second = kill_leader(chaos, producer, topic, other)
        # then the controller
        old = chaos.controller()
        killed = chaos.kill(old)
        restarted = chaos.restart_soon(old, after=3.0)
        chaos.wait_until(lambda: chaos.controller() not in (-1, old), SESSION_TIMEOUT_S + 20, "a new controller")
        took = time.monotonic() - killed
        restarted(60)
        chaos.wait_full_isr(topic, range(3), timeout=60)
        print(f"SIGKILL controller {old}: broker {chaos.controller()} controller after {took:.2f} s")
        producer.wait_acks(150, 30, after=time.monotonic())  # writes go on after everything
    assert producer.fatal is None, explain(chaos, topic, 3, producer)
    report = final_check(cluster, chaos, topic, 3, producer.attempts, producer)
    print(f"kills: {report.summary().splitlines()[0]}")
    print(f"failover (SIGKILL of a leader → first acks=all ack on its successor): "
          f"{first['first_ack']:.2f} s and {second['first_ack']:.2f} s "
          f"(zookeeper.session.timeout.ms={int(SESSION_TIMEOUT_S * 1000)})")
    assert report.acked > 0


# -- b) ----------------------------------------------------------------------------------------


def test_a_paused_follower_leaves_the_isr_and_rejoins_after_sigcont(cluster, chaos):
    topic = create_topic(cluster, partitions=1, rf=3, configs=SAFE, chaos=chaos)
    leader, controller = chaos.leader(topic, 0), chaos.controller()
    followers = [r for r in chaos.replicas(topic, 0) if r != leader]
    victim = next((f for f in followers if f != controller), followers[0])
    with running(ContinuousProducer(cluster.bootstrap, topic, partitions=1, rate=100), chaos) as producer:
        producer.wait_acks(50, 30)
        paused = chaos.pause(victim)
        isr = chaos.wait_isr(topic, 0, lambda isr: victim not in isr, timeout=1.5 * LAG_TIME_MAX_S + 3 + 6,
                             what=f"follower {victim} left the ISR")
        shrunk = time.monotonic()
        still_registered = victim in chaos.registered()
        # acks=all writes continue with the ISR shrunk (2 ≥ min.insync.replicas)
        producer.wait_acks(20, 15, after=shrunk)
        resumed = chaos.resume(victim)
        gap, _ = producer.max_gap(paused, resumed)
        chaos.wait_isr(topic, 0, lambda isr: victim in isr, timeout=60, what=f"follower {victim} rejoined the ISR")
        rejoined = time.monotonic()
        producer.wait_acks(50, 30, after=rejoined)
    print(f"SIGSTOP follower {victim}: ISR {isr} after {shrunk - paused:.2f} s "
          f"(replica.lag.time.max.ms={int(LAG_TIME_MAX_S * 1000)}; follower still registered: {still_registered}); "
          f"longest time without an ack while paused {gap:.2f} s; back in the ISR {rejoined - resumed:.2f} s after SIGCONT")
    assert producer.fatal is None, explain(chaos, topic, 1, producer)
    final_check(cluster, chaos, topic, 1, producer.attempts, producer)


# -- c) ----------------------------------------------------------------------------------------


def _leader_reports_isr(info: dict, topic: str) -> list[int] | None:
    """The ISR of partition 0 as the broker ``info`` itself answers Metadata (the only live one)."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": f"{info['host']}:{info['port']}"})
    try:
        meta = admin.list_topics(topic, timeout=5)
    except Exception:  # noqa: BLE001 - not answering yet
        return None
    partition = meta.topics[topic].partitions.get(0)
    return sorted(partition.isrs) if partition is not None else None


def test_only_the_leader_in_the_isr_refuses_acks_all_and_appends_nothing(cluster, chaos):
    from confluent_kafka import KafkaError, Producer

    topic = create_topic(cluster, partitions=1, rf=3, configs=SAFE, chaos=chaos)
    leader = chaos.leader(topic, 0)
    info = cluster.broker(leader)
    code, _ = raw_produce(info["host"], info["port"], topic, 0, [b"before-0", b"before-1"], acks=-1, timeout_ms=10000)
    assert code == ErrorCode.NONE, explain(chaos, topic)
    followers = [r for r in chaos.replicas(topic, 0) if r != leader]
    for f in followers:
        chaos.kill(f)
    with explained(chaos, topic):
        chaos.wait_isr(topic, 0, [leader], timeout=SESSION_TIMEOUT_S + 20)
        # ZooKeeper shows the shrink before the leader has applied it (the controller's
        # LeaderAndIsr may still be in flight): a produce in between would be appended and
        # then answered NOT_ENOUGH_REPLICAS_AFTER_APPEND. Wait for the leader's own answer.
        chaos.wait_until(lambda: _leader_reports_isr(info, topic) == [leader], 30, "the leader to apply the shrink")
    leo_before = log_end_offset(chaos.segment_bytes(leader, topic, 0))

    # the exact protocol answer, no client in between
    code, _ = raw_produce(info["host"], info["port"], topic, 0, [b"refused-raw"], acks=-1, timeout_ms=5000)
    assert code == ErrorCode.NOT_ENOUGH_REPLICAS, f"error {code}\n{explain(chaos, topic)}"

    # confluent-kafka, without retries, gets the error in its delivery report
    reports = []
    producer = Producer({"bootstrap.servers": f"{info['host']}:{info['port']}", "acks": "all", "retries": 0,
                         "enable.idempotence": False, "message.timeout.ms": 20000})
    producer.produce(topic, value=b"refused-ck", partition=0, on_delivery=lambda err, msg: reports.append(err))
    producer.flush(30)
    assert len(reports) == 1 and reports[0] is not None, reports
    assert reports[0].code() == KafkaError.NOT_ENOUGH_REPLICAS, reports[0]

    # kafka-python, without retries, raises it
    from kafka import KafkaProducer
    from kafka.errors import NotEnoughReplicasError

    kp = KafkaProducer(bootstrap_servers=f"{info['host']}:{info['port']}", acks="all", retries=0,
                       enable_idempotence=False, request_timeout_ms=20000)
    try:
        with pytest.raises(NotEnoughReplicasError):
            kp.send(topic, value=b"refused-kp", partition=0).get(timeout=30)
    finally:
        kp.close(timeout=5)

    leo_after = log_end_offset(chaos.segment_bytes(leader, topic, 0))
    assert leo_after == leo_before, f"the leader's log end offset moved {leo_before} → {leo_after}"
    # acks=1 does not need the ISR: the leader is alive and appends
    code, offset = raw_produce(info["host"], info["port"], topic, 0, [b"acks-1"], acks=1)
    assert (code, offset) == (ErrorCode.NONE, leo_before)
    with explained(chaos, topic):
        for f in followers:
            chaos.restart(f)
        chaos.wait_full_isr(topic, [0], timeout=60)
    got = drain(cluster.bootstrap, topic, 1)
    assert [r.value for r in got.records] == [b"before-0", b"before-1", b"acks-1"]


# -- d) ----------------------------------------------------------------------------------------


def test_a_zombie_leader_acknowledges_nothing_then_truncates_and_follows(cluster, chaos):
    topic = create_topic(cluster, partitions=1, rf=3, configs=SAFE, chaos=chaos)
    old = chaos.leader(topic, 0)
    info = cluster.broker(old)
    zombie: dict[str, object] = {}
    with running(ContinuousProducer(cluster.bootstrap, topic, partitions=1, rate=100), chaos) as producer:
        producer.wait_acks(100, 30)
        paused = chaos.pause(old)

        def pinned() -> None:
            # queued in the frozen broker's socket; it answers when it wakes up
            try:
                zombie["queued"] = raw_produce(info["host"], info["port"], topic, 0, [b"zombie-queued-0", b"zombie-queued-1"],
                                               acks=-1, timeout_ms=10000, socket_timeout=120)
            except OSError as exc:
                zombie["queued"] = exc

        t = threading.Thread(target=pinned, daemon=True)
        t.start()
        new = chaos.wait_leader(topic, 0, timeout=SESSION_TIMEOUT_S + 20, not_in=[old])
        elected = time.monotonic()
        producer.wait_acks(100, 30, after=elected)  # acks=all writes on the new leader
        resumed = chaos.resume(old)
        try:
            zombie["awake"] = raw_produce(info["host"], info["port"], topic, 0, [b"zombie-awake-0"],
                                          acks=-1, timeout_ms=5000, socket_timeout=60)
        except OSError as exc:
            zombie["awake"] = exc
        t.join(90)
        assert not t.is_alive(), "the produce pinned to the zombie got no answer"
        chaos.wait_isr(topic, 0, lambda isr: old in isr, timeout=60, what=f"the old leader {old} rejoined the ISR")
        rejoined = time.monotonic()
        producer.wait_acks(50, 30, after=rejoined)
    print(f"zombie leader {old}: SIGSTOP, broker {new} elected after {elected - paused:.2f} s; "
          f"produces pinned to the zombie answered {zombie}; back in the ISR {rejoined - resumed:.2f} s after SIGCONT")
    why = explain(chaos, topic, 1, producer)
    for name, result in zombie.items():
        assert isinstance(result, OSError) or result[0] != ErrorCode.NONE, f"the zombie acknowledged the {name} write: {result}\n{why}"
    attempts = list(producer.attempts)
    report = final_check(cluster, chaos, topic, 1, attempts, producer)
    visible = [r.value for r in drain(cluster.bootstrap, topic, 1).records if r.value.startswith(b"zombie-")]
    assert visible == [], f"the zombie's writes are visible: {visible}\n{why}"
    assert report.acked > 200


# -- e) ----------------------------------------------------------------------------------------


def test_controlled_shutdown_moves_leadership_before_exit_with_a_short_no_ack_window(cluster, chaos):
    topic = create_topic(cluster, partitions=3, rf=3, configs=SAFE, chaos=chaos)
    with running(ContinuousProducer(cluster.bootstrap, topic, partitions=3, rate=300), chaos) as producer:
        producer.wait_acks(300, 30)
        controller = chaos.controller()
        part = next((p for p in range(3) if chaos.leader(topic, p) != controller), 0)
        victim = chaos.leader(topic, part)
        led = [p for p in range(3) if chaos.leader(topic, p) == victim]
        pid = chaos.pid(victim)
        sent = chaos.terminate(victim)
        moved: dict[int, float] = {}
        exited = None
        deadline = sent + 60
        while time.monotonic() < deadline:
            for p in led:
                if p not in moved and chaos.leader(topic, p) != victim:
                    moved[p] = time.monotonic()
            if process_state(pid) in (None, "Z", "X"):
                exited = time.monotonic()
                break
            time.sleep(0.01)
        assert exited is not None, f"broker {victim} did not exit within 60 s of SIGTERM"
        time.sleep(3)  # acks after the exit belong in the window too
        window_end = time.monotonic()
        gaps = {p: producer.max_gap(sent - 1, window_end, partition=p)[0] for p in led}
        overall = producer.max_gap(sent - 1, window_end)[0]
        chaos.restart(victim)
        chaos.wait_full_isr(topic, range(3), timeout=60)
    why = explain(chaos, topic, 3, producer)
    print(f"controlled shutdown of broker {victim} (leader of {led}): leadership moved "
          f"{', '.join(f'p{p} +{moved[p] - sent:.2f} s' for p in sorted(moved))} after SIGTERM, process exited "
          f"+{exited - sent:.2f} s; longest time without an ack: {', '.join(f'p{p} {g:.2f} s' for p, g in gaps.items())} "
          f"(any partition: {overall:.2f} s)")
    assert set(moved) == set(led), f"leadership of {sorted(set(led) - set(moved))} did not move before the exit\n{why}"
    assert all(moved[p] <= exited for p in led), why
    # A failover through the dead broker's session expiry leaves ≥ 6 s (zookeeper.session.timeout.ms)
    # without acks; a controlled shutdown well under that. The window's size itself is a figure for
    # `make bench-replication`, not a bound for a shared, loaded machine.
    assert max(gaps.values()) <= 3.0, f"no acks for {max(gaps.values()):.2f} s during the controlled shutdown\n{why}"
    assert producer.fatal is None, why
    final_check(cluster, chaos, topic, 3, producer.attempts, producer)


# -- f) ----------------------------------------------------------------------------------------


def test_negative_control_unclean_election_loses_acknowledged_writes(cluster, chaos):
    """unclean.leader.election.enable=true, min.insync.replicas=1: the followers are killed (ISR →
    {leader}), the leader acknowledges more writes alone and is killed, the stale followers come
    back and one is elected uncleanly, new writes reuse the offsets — the checker must see it."""
    topic = create_topic(cluster, partitions=1, rf=3, chaos=chaos,
                         configs={"unclean.leader.election.enable": "true", "min.insync.replicas": "1"})
    leader = chaos.leader(topic, 0)
    followers = [r for r in chaos.replicas(topic, 0) if r != leader]
    with running(ContinuousProducer(cluster.bootstrap, topic, partitions=1, rate=100, tag="before"), chaos) as before:
        before.wait_acks(50, 30)  # replicated to all three
        killed = time.monotonic()
        for f in followers:
            chaos.kill(f)
        chaos.wait_isr(topic, 0, [leader], timeout=SESSION_TIMEOUT_S + 20)
        before.wait_acks(50, 30, after=time.monotonic())  # acknowledged by the leader alone
    # (a superset of) the values only the leader held: acknowledged after the followers died
    alone = {a.value for a in before.attempts if a.status == ACKED and a.acked_at and a.acked_at > killed}
    chaos.kill(leader)
    with explained(chaos, topic):
        chaos.wait_dead(leader)
        chaos.wait_unregistered(leader)
        for f in followers:
            chaos.restart(f)
        new = chaos.wait_leader(topic, 0, timeout=60, not_in=[leader])
    with running(ContinuousProducer(cluster.bootstrap, topic, partitions=1, rate=100, tag="after"), chaos) as after:
        after.wait_acks(50, 30)  # new writes on the unclean leader take the lost offsets
    with explained(chaos, topic):
        chaos.restart(leader)  # it truncates to the unclean leader's log
        chaos.wait_full_isr(topic, [0], timeout=60)
    got = drain(cluster.bootstrap, topic, 1)
    report = check_delivery(before.attempts + after.attempts, got.records)
    print(f"negative control (unclean election of broker {new}): {report.summary()}")
    why = explain(chaos, topic, 1)
    assert got.complete, why
    assert not report.ok, f"the checker saw no loss after an unclean election\n{why}"
    assert report.lost, why
    assert set(report.lost) <= alone, f"lost values that were replicated before the ISR shrank\n{why}"
    assert report.lost_writes and report.inconsistent_offsets, report.summary()

