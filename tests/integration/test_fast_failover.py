"""The fast failover path (mafka.controller.fast_failover) on a real cluster: a dead broker is
failed over when its listener refuses connections, a frozen one only when its session expires.

One 3-broker cluster for the module with a longer ZooKeeper session (8 s), so
that "failed over while the dead broker's registration is still in
ZooKeeper" is unmistakably the fast path and not session expiry.  Durable
settings (RF 3, ``min.insync.replicas=2``, unclean election off), an
idempotent acks=all confluent-kafka producer per test, and the chaos
checker's final verdict: every acknowledged value read back exactly once, at
its offset, in order, with byte-identical replicas.

* SIGKILL of a leader that is not the controller: a new leader within half
  the session timeout while ``/brokers/ids/<victim>`` still exists;
* SIGKILL of the controller: the other brokers see its listener refuse,
  delete ``/controller`` (epoch-checked), a new controller is elected and
  fences the dead broker — all before its session expires;
* SIGSTOP of a leader: *no* fast path — the leader stays for 70% of the
  session timeout and moves only when the session expires; after SIGCONT
  the zombie is fenced and rejoins as a follower;
* SIGKILL and an immediate restart on the same port: leadership moves at
  once; the restarted broker waits for its old session to expire and
  registers anew (a new session), then rejoins every ISR.

Figures are printed (``pytest -s``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.harness.chaos import (
    Chaos,
    ContinuousProducer,
    create_topic,
    final_check,
    healed,
    running,
)
from tests.harness.cluster import ClusterSpec

pytestmark = pytest.mark.integration

SESSION_TIMEOUT_S = 8.0
SETTINGS = {
    "zookeeper.session.timeout.ms": str(int(SESSION_TIMEOUT_S * 1000)),
    "replica.lag.time.max.ms": "4000",
    "min.insync.replicas": "2",
    "unclean.leader.election.enable": "false",
    "default.replication.factor": "3",
    "auto.leader.rebalance.enable": "false",  # leaders move only when the tests move them
}
SAFE = {"min.insync.replicas": "2", "unclean.leader.election.enable": "false"}
#: The fast path must beat this by far; session expiry cannot.
FAST_S = SESSION_TIMEOUT_S / 2

CLUSTER = ClusterSpec(settings=SETTINGS, shared=False)  # kills, freezes and restarts brokers


@pytest.fixture
def chaos(cluster):
    """A fault injector; every broker is running and registered before and after the test."""
    with healed(cluster) as ch:
        yield ch


def partition_led_by(chaos: Chaos, topic: str, partitions: int, want_controller: bool) -> int:
    controller = chaos.controller()
    for p in range(partitions):
        if (chaos.leader(topic, p) == controller) == want_controller:
            return p
    pytest.fail(f"no partition of {topic} whose leader {'is' if want_controller else 'is not'} "
                f"the controller {controller}")


@contextmanager
def durable_run(cluster, chaos: Chaos, leader_is_controller: bool) -> Iterator[tuple[str, int, ContinuousProducer]]:
    """A topic (3 partitions, RF 3) with a producer running; yields (topic, the partition whose leader
    is or is not the controller, producer) once it is acknowledged.  After the fault: every ISR full
    again, writes going on, and the delivery checker's verdict."""
    topic = create_topic(cluster, partitions=3, rf=3, configs=SAFE, chaos=chaos)
    p = partition_led_by(chaos, topic, 3, want_controller=leader_is_controller)
    with running(ContinuousProducer(cluster.bootstrap, topic, partitions=3, rate=150), chaos) as producer:
        producer.wait_acks(100, 30)
        yield topic, p, producer
        chaos.wait_full_isr(topic, range(3), timeout=60)
        producer.wait_acks(100, 30, after=time.monotonic())
    assert producer.fatal is None
    final_check(cluster, chaos, topic, 3, producer.attempts, producer)


def moved_while_registered(chaos: Chaos, topic: str, partition: int, victim: int, killed: float) -> float:
    """Waits (at most FAST_S) for a leader other than *victim*; asserts *victim* was still registered then."""
    def moved() -> bool:
        leader = chaos.leader(topic, partition)
        return leader >= 0 and leader != victim

    chaos.wait_until(moved, FAST_S, f"{topic}-{partition} led by another broker than {victim} "
                                    f"within {FAST_S:.0f} s of the SIGKILL", interval=0.02)
    took = time.monotonic() - killed
    assert victim in chaos.registered(), "the leader moved only when the session expired: not the fast path"
    return took


def test_a_killed_leader_is_replaced_while_its_session_lives(cluster, chaos):
    with durable_run(cluster, chaos, leader_is_controller=False) as (topic, p, producer):
        victim = chaos.leader(topic, p)
        killed = chaos.kill(victim)
        took = moved_while_registered(chaos, topic, p, victim, killed)
        first = producer.wait_acks(1, FAST_S, after=killed + 0.5, partition=p)
        print(f"SIGKILL leader {victim}: leader moved after {took:.2f} s, first acks=all ack on the successor "
              f"{first - killed:.2f} s after the SIGKILL (zookeeper.session.timeout.ms={int(SESSION_TIMEOUT_S * 1000)})")
        chaos.restart(victim, wait_expiry=False)  # waits for the new registration


def test_a_killed_controller_is_replaced_while_its_session_lives(cluster, chaos):
    with durable_run(cluster, chaos, leader_is_controller=True) as (topic, p, producer):
        old = chaos.controller()
        killed = chaos.kill(old)
        chaos.wait_until(lambda: chaos.controller() not in (-1, old), FAST_S, "another controller", interval=0.02)
        elected = time.monotonic() - killed
        assert old in chaos.registered(), "the controller moved only when its session expired: not the fast path"
        took = moved_while_registered(chaos, topic, p, old, killed)
        first = producer.wait_acks(1, FAST_S, after=killed + 0.5, partition=p)
        print(f"SIGKILL controller {old}: broker {chaos.controller()} elected after {elected:.2f} s, "
              f"its partition led elsewhere after {took:.2f} s, first ack {first - killed:.2f} s after the SIGKILL")
        chaos.restart(old, wait_expiry=False)


def test_a_frozen_leader_keeps_its_partition_until_its_session_expires(cluster, chaos):
    with durable_run(cluster, chaos, leader_is_controller=False) as (topic, p, producer):
        victim = chaos.leader(topic, p)
        paused = chaos.pause(victim)
        # A frozen process still holds its port: no refusal, no fast path.
        while time.monotonic() < paused + 0.7 * SESSION_TIMEOUT_S:
            assert chaos.leader(topic, p) == victim, "a frozen leader was failed over before its session expired"
            time.sleep(0.2)
        chaos.wait_leader(topic, p, timeout=SESSION_TIMEOUT_S + 15, not_in=[victim])
        moved = time.monotonic() - paused
        assert moved >= 0.7 * SESSION_TIMEOUT_S
        chaos.resume(victim)
        print(f"SIGSTOP leader {victim}: leader moved after {moved:.2f} s (session timeout {SESSION_TIMEOUT_S:.0f} s)")
        # The zombie learns it is fenced, registers again and follows.
        chaos.wait_registered(victim, 60)


def test_a_leader_restarted_on_its_port_at_once_registers_anew(cluster, chaos):
    with durable_run(cluster, chaos, leader_is_controller=False) as (topic, p, producer):
        victim = chaos.leader(topic, p)
        old_owner = chaos.registration_owner(victim)
        killed = chaos.kill(victim)
        restarted = chaos.restart_soon(victim, after=0.0)  # the same port, while the old session lives
        took = moved_while_registered(chaos, topic, p, victim, killed)
        restarted(2 * SESSION_TIMEOUT_S + 30)  # registered again: only after the old session expired
        owner = chaos.registration_owner(victim)
        assert owner is not None and owner != old_owner
        print(f"SIGKILL + immediate restart of leader {victim}: leader moved after {took:.2f} s; "
              f"registered anew {time.monotonic() - killed:.1f} s after the SIGKILL")
