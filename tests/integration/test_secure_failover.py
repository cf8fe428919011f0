"""Failover with inter-broker SASL_SSL (issue 29): the replication and group failover tests' cases, secured.

One 3-broker cluster of its own (it kills and restarts brokers) with the
security settings of ``test_security_tls.py`` — PEM certificates from
:func:`~tests.harness.certs.generate_pki`, SSL and SASL_SSL listeners, and
``inter.broker.listener.name=SASL_SSL`` with ``sasl.mechanism.inter.broker.protocol=PLAIN``
(the broker logs in to its peers as the JAAS ``username``/``password`` of that
listener) — and the durability profile of ``test_replication.py``
(:data:`~tests.harness.cluster.DURABLE_SETTINGS`: RF 3, ``min.insync.replicas=2``,
unclean election off, 6 s ZooKeeper sessions, ``replica.lag.time.max.ms=4000``,
no automatic leader rebalance).  Clients use the PLAINTEXT listener; the
brokers talk to each other over SASL_SSL only, which every test asserts at its
end (:func:`assert_brokers_talk_only_sasl_ssl`): the config, no authentication
or TLS failure in any broker's log, and every established broker-to-broker
connection (read from ``/proc``) going to a peer's SASL_SSL port.

1. Acknowledged writes survive the SIGKILL of a partition leader: an idempotent
   acks=all confluent-kafka producer (:class:`~tests.harness.chaos.ContinuousProducer`)
   writes while the leader dies, the victim restarts and rejoins every ISR (its
   catch-up fetches run over SASL_SSL); the delivery checker finds nothing lost,
   duplicated or reordered, and the replicas end byte-identical.
2. A consumer group keeps consuming through the SIGKILL of its coordinator: three
   confluent-kafka members (:class:`~tests.harness.group_chaos.GroupUnderChaos`,
   committing offset+1 after each message) on a topic produced during the test;
   :func:`~tests.harness.group_chaos.check_group` finds every acknowledged value
   consumed, no commit below its floor, and the committed offsets at the partition ends.

Figures (failover, first commit after the kill) are printed: run with ``-s``.
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from pathlib import Path

import pytest

from mafka.group.offsets_records import offsets_partition_for
from tests.harness.certs import generate_pki
from tests.harness.chaos import (
    ContinuousProducer,
    create_topic,
    drain,
    explained,
    final_check,
    healed,
    kill_leader,
    running,
)
from tests.harness.checker import ACKED
from tests.harness.cluster import DURABLE_SETTINGS, ClusterSpec, LocalCluster
from tests.harness.group_chaos import GroupUnderChaos, check_group, read_committed
from tests.harness.waits import wait_until

pytestmark = pytest.mark.integration

PKI = generate_pki(Path(tempfile.mkdtemp(prefix="mafka-secure-failover-")))
JAAS = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" '
    'password="broker-secret" user_broker="broker-secret";'
)
SECURITY = {  # test_security_tls.py's, without its client users
    "ssl.keystore.type": "PEM",
    "ssl.keystore.location": str(PKI.broker),
    "ssl.truststore.type": "PEM",
    "ssl.truststore.location": str(PKI.ca),
    "listener.name.ssl.ssl.client.auth": "required",
    "ssl.principal.mapping.rules": "RULE:^CN=([^,]*),OU=test,.*$/$1/L",
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
    "sasl.mechanism.inter.broker.protocol": "PLAIN",
    "inter.broker.listener.name": "SASL_SSL",
    "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
}
OFFSETS = "__consumer_offsets"
SETTINGS = {
    **DURABLE_SETTINGS,  # test_replication.py's profile, __consumer_offsets with 4 partitions
    "offsets.topic.replication.factor": "3",
    "group.initial.rebalance.delay.ms": "300",  # as test_groups.py: the tests are not about the delay
    **SECURITY,
}
SAFE = {"min.insync.replicas": "2", "unclean.leader.election.enable": "false"}
SESSION_TIMEOUT_S = int(SETTINGS["zookeeper.session.timeout.ms"]) / 1000
PARTITIONS = 6  # the group test's topic: 2 partitions per member

CLUSTER = ClusterSpec(settings=SETTINGS, listeners=("SSL", "SASL_SSL"), shared=False)  # kills and restarts brokers

#: what a failed inter-broker login or TLS handshake leaves in a broker's log (the peer's
#: "SASL PLAIN authentication failed", the fetcher's "connecting to … failed: <reason>")
AUTH_FAILURE = re.compile(r"authenticat\w* fail|SaslAuthentication|certificate verify failed|SSL routines|"
                          r"alert (?:handshake|bad certificate|unknown ca)|handshake fail", re.IGNORECASE)


@pytest.fixture
def chaos(cluster):
    """A fault injector; every broker is running and registered before and after the test."""
    with healed(cluster) as ch:
        yield ch


# ---------------------------------------------------------------------- inter-broker SASL_SSL


def broker_connections(cluster: LocalCluster) -> dict[int, list[tuple[int, str]]]:
    """Per broker, (peer, listener) of every established connection its process opened to a
    broker's listener port (its own included), from ``/proc/<pid>/fd`` and ``/proc/<pid>/net/tcp*``."""
    ports = {port: (b["id"], name) for b in cluster.info["brokers"] for name, port in b["listeners"].items()}
    out: dict[int, list[tuple[int, str]]] = {}
    for b in cluster.info["brokers"]:
        inodes = set()
        for fd in Path(f"/proc/{b['pid']}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:  # closed meanwhile
                continue
            if target.startswith("socket:["):
                inodes.add(target[len("socket:["):-1])
        found = []
        for table in ("tcp", "tcp6"):
            for line in Path(f"/proc/{b['pid']}/net/{table}").read_text().splitlines()[1:]:
                fields = line.split()
                local, remote, state, inode = fields[1], fields[2], fields[3], fields[9]
                local_port, remote_port = (int(a.rsplit(":", 1)[1], 16) for a in (local, remote))
                # 01: ESTABLISHED; an accepted connection's local port is a listener port, an opened one's not
                if inode in inodes and state == "01" and remote_port in ports and local_port not in ports:
                    found.append(ports[remote_port])
        out[b["id"]] = sorted(found)
    return out


def assert_brokers_talk_only_sasl_ssl(cluster: LocalCluster, followers: list[int]) -> None:
    """Every broker is configured to replicate over SASL_SSL, logged no failed inter-broker login or
    TLS handshake, and holds connections to its peers on their SASL_SSL ports only; ``followers``
    (brokers that follow some partition now) hold at least one."""
    for b in cluster.info["brokers"]:
        config = Path(b["config"]).read_text().splitlines()
        assert "inter.broker.listener.name=SASL_SSL" in config, f"broker {b['id']}: {b['config']}"
        assert "sasl.mechanism.inter.broker.protocol=PLAIN" in config, f"broker {b['id']}: {b['config']}"
        failures = [line for line in Path(b["log_file"]).read_text(errors="replace").splitlines()
                    if AUTH_FAILURE.search(line)]
        assert not failures, f"broker {b['id']} ({b['log_file']}): {failures[:5]}"
    connections = broker_connections(cluster)
    plain = {b: [c for c in conns if c[1] != "SASL_SSL"] for b, conns in connections.items()}
    assert not any(plain.values()), f"broker-to-broker connections off SASL_SSL: {plain} (all: {connections})"
    for b in followers:
        assert connections[b], f"follower {b} holds no connection to a peer's listener: {connections}"
    print(f"  inter-broker connections (broker: [(peer, listener)]): {connections}")


# ---------------------------------------------------------------------- 1. replication


def test_acknowledged_writes_survive_a_leader_sigkill_with_sasl_ssl_replication(cluster, chaos):
    topic = create_topic(cluster, partitions=3, rf=3, configs=SAFE, chaos=chaos)
    with running(ContinuousProducer(cluster.bootstrap, topic, partitions=3, rate=150), chaos) as producer:
        producer.wait_acks(150, 30)
        figures = kill_leader(chaos, producer, topic, 0)  # restarted; back in every ISR of the topic
        producer.wait_acks(150, 30, after=time.monotonic())  # writes go on after the victim's catch-up
    victim = figures["victim"]
    assert producer.fatal is None, producer.fatal
    # the full ISR again, then 0 lost, 0 duplicates, in order, and byte-identical replicas
    report = final_check(cluster, chaos, topic, 3, producer.attempts, producer)
    assert report.acked > 0 and not report.duplicates, report.summary()
    assert all(victim in chaos.isr(topic, p) for p in range(3)), [chaos.isr(topic, p) for p in range(3)]
    print(f"SIGKILL of leader {victim} with SASL_SSL replication: {report.summary().splitlines()[0]}; "
          f"first ack on the successor {figures['first_ack']:.2f} s after the kill")
    # the victim leads nothing now (no automatic rebalance): it fetches from the leaders over SASL_SSL
    assert_brokers_talk_only_sasl_ssl(cluster, followers=[victim])


# ---------------------------------------------------------------------- 2. consumer group


def test_a_group_keeps_consuming_through_a_sigkill_of_its_coordinator(cluster, chaos, tmp_path):
    topic = create_topic(cluster, partitions=PARTITIONS, rf=3, configs=SAFE, chaos=chaos)
    producer = ContinuousProducer(cluster.bootstrap, topic, partitions=PARTITIONS, rate=60)
    runner = GroupUnderChaos("confluent", cluster.bootstrap, topic, PARTITIONS, tmp_path, members=3,
                             session_timeout_ms=int(SESSION_TIMEOUT_S * 1000), acks=lambda: list(producer.acks))
    offsets_partition = offsets_partition_for(runner.name, int(SETTINGS["offsets.topic.num.partitions"]))
    try:
        with running(producer, chaos):
            producer.wait_acks(12, 30)
            # creates __consumer_offsets (FindCoordinator does); its leader first, then the members
            read_committed(cluster.bootstrap, runner.name, topic, PARTITIONS, timeout=60)
            with explained(chaos, OFFSETS, int(SETTINGS["offsets.topic.num.partitions"])):
                chaos.wait_leader(OFFSETS, offsets_partition, timeout=60)
                chaos.wait_full_isr(OFFSETS, [offsets_partition], timeout=60)
            runner.start()
            runner.wait_balanced(45)
            runner.group.wait_consumed([a.value.decode() for a in producer.attempts if a.status == ACKED], 30)
            coordinator = chaos.leader(OFFSETS, offsets_partition)
            killed = chaos.kill(coordinator)
            with explained(chaos, OFFSETS, int(SETTINGS["offsets.topic.num.partitions"])):
                successor = chaos.wait_leader(OFFSETS, offsets_partition, timeout=SESSION_TIMEOUT_S + 20,
                                              not_in=[coordinator])
            elected = time.monotonic()
            # restarted once its successor leads (so also after a controller's failover, see kill_leader)
            restarted = chaos.restart_soon(coordinator, after=0.0)
            first_commit = wait_until(
                lambda: next((t for t, *_ in runner.group.committed() if t > killed + 0.5), None), 60,
                lambda: f"no commit succeeded after the coordinator's SIGKILL\n{runner.group.explain()}")
            producer.wait_acks(60, 30, after=first_commit)  # acknowledged after commits resumed
            restarted(60)
            with explained(chaos, topic, PARTITIONS, producer):
                chaos.wait_full_isr(topic, range(PARTITIONS), timeout=60)
                chaos.wait_full_isr(OFFSETS, [offsets_partition], timeout=60)
        assert producer.fatal is None, producer.fatal
        got = drain(cluster.bootstrap, topic, PARTITIONS, timeout=60)
        assert got.complete, f"the drain did not reach the high watermarks {got.high_watermarks}"
        acked = {(a.partition, a.offset): a.value for a in producer.attempts if a.status == ACKED}
        ends = dict(got.high_watermarks)
        done = runner.wait_done(acked, ends, 60)
        end = time.monotonic()
        runner.stop()
        final = read_committed(cluster.bootstrap, runner.name, topic, PARTITIONS, timeout=60)
        report = check_group(runner, producer.attempts, got.records, ends, final, None, done, killed, end)
    finally:
        runner.close()
    print(f"SIGKILL of coordinator {coordinator} (leader of {OFFSETS}-{offsets_partition}): broker {successor} "
          f"took over after {elected - killed:.2f} s; first successful commit {first_commit - killed:.2f} s after "
          f"the kill\n{report.summary(t0=killed)}")
    assert report.ok, report.summary(t0=killed)
    assert not runner.restarts, f"members had to be restarted: {runner.restarts}"
    assert any(a.acked_at is not None and a.acked_at > first_commit for a in producer.attempts)
    assert_brokers_talk_only_sasl_ssl(cluster, followers=[coordinator])
