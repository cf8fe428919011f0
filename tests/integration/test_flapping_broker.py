"""A broker that flaps — killed and restarted again and again — does not make leadership ping-pong.

Its cluster runs Kafka's defaults for leader balancing
(``auto.leader.rebalance.enable=true``, ``leader.imbalance.check.interval.seconds=300``)
with a 6 s ZooKeeper session, and the fast failover path on.  Broker B, the
preferred leader of some partitions, is SIGKILLed, restarted at once (it
registers when its old session has expired), killed again two seconds after
it registered, three times over, while an idempotent acks=all producer
writes to every partition.  Each partition B led moves away at the first
kill (within a second: the fast path) and, since a restarted broker only
becomes a follower and the next preferred-leader check is minutes away, is
never handed back during the test: at most one leader change per partition.
The delivery checker then finds every acknowledged write.
"""

from __future__ import annotations

import time

import pytest

from tests.harness.chaos import ContinuousProducer, create_topic, final_check, healed, running
from tests.harness.cluster import ClusterSpec

pytestmark = [pytest.mark.integration, pytest.mark.chaos]  # ~45 s: `make chaos` runs it, not `make test`

SESSION_TIMEOUT_S = 6.0
SETTINGS = {
    "zookeeper.session.timeout.ms": str(int(SESSION_TIMEOUT_S * 1000)),
    "replica.lag.time.max.ms": "4000",
    "min.insync.replicas": "2",
    "unclean.leader.election.enable": "false",
    "auto.leader.rebalance.enable": "true",
    "leader.imbalance.check.interval.seconds": "300",
}
SAFE = {"min.insync.replicas": "2", "unclean.leader.election.enable": "false"}
PARTITIONS = 6
FLAPS = 3

CLUSTER = ClusterSpec(settings=SETTINGS, shared=False)  # kills and restarts a broker


def test_a_flapping_broker_does_not_make_leadership_ping_pong(cluster):
    with healed(cluster) as chaos:
        topic = create_topic(cluster, partitions=PARTITIONS, rf=3, configs=SAFE, chaos=chaos)
        # Leaders settle on the preferred replicas (a new topic's leaders are its first replicas).
        leaders = {p: chaos.leader(topic, p) for p in range(PARTITIONS)}
        victim = leaders[0]
        led = [p for p, b in leaders.items() if b == victim]
        changes = {p: 0 for p in range(PARTITIONS)}
        last = dict(leaders)
        victim_led_again: list[tuple[float, int]] = []

        def sample() -> None:
            for p in range(PARTITIONS):
                now = chaos.leader(topic, p)
                if now >= 0 and now != last[p]:
                    changes[p] += 1
                    last[p] = now
                    if now == victim:
                        victim_led_again.append((time.monotonic(), p))

        with running(ContinuousProducer(cluster.bootstrap, topic, partitions=PARTITIONS, rate=150), chaos) as producer:
            producer.wait_acks(100, 30)
            first_kill = None
            for flap in range(FLAPS):
                killed = chaos.kill(victim)
                first_kill = first_kill or killed
                if flap == 0:
                    chaos.wait_until(lambda: (sample(), all(last[p] != victim for p in led))[1], 5,
                                     f"partitions {led} led by another broker than {victim}", interval=0.05)
                    moved = time.monotonic() - killed
                # Restarted at once: it registers when its old session has expired.
                chaos.restart(victim, wait_expiry=False, timeout=60)
                deadline = time.monotonic() + 2.0
                while time.monotonic() < deadline:
                    sample()
                    time.sleep(0.1)
            chaos.wait_full_isr(topic, range(PARTITIONS), timeout=60)
            sample()
            producer.wait_acks(100, 30, after=time.monotonic())
        print(f"broker {victim} flapped {FLAPS} times over {time.monotonic() - first_kill:.0f} s: its partitions "
              f"{led} moved after {moved:.2f} s; leader changes per partition {changes}")
        assert not victim_led_again, f"broker {victim} was made leader again while flapping: {victim_led_again}"
        assert all(n <= 1 for n in changes.values()), f"leadership moved back and forth: {changes}"
        assert all(changes[p] == 1 for p in led)
        assert producer.fatal is None
        final_check(cluster, chaos, topic, PARTITIONS, producer.attempts, producer)
