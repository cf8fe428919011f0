"""KIP-848's consumer group protocol on a real cluster, judged by librdkafka (confluent-kafka 2.16).

Members are processes (:mod:`tests.harness.group_member`, ``--group-protocol consumer``): each
subscribes with ``group.protocol=consumer``, prints every assignment change, record and commit
(offset + 1, synchronously, after printing the record: at-least-once).  An idempotent acks=all
producer writes unique values to a 6-partition RF-3 topic meanwhile.  The brokers run with
``group.consumer.session.timeout.ms=6000`` and a 1 s heartbeat interval.

1. Three members share the partitions; a fourth joins and one is SIGKILLed: members that keep a
   partition are never asked to revoke it (the incremental protocol's point, checked against the
   rebalance callbacks), the killed member's partitions reach the survivors after its session,
   every acknowledged value is consumed with no gap, committed offsets never go backwards, and
   ConsumerGroupDescribe / ListGroups v5 show a ``consumer`` group.  A classic eager group
   going through the same join is the negative control: the same check catches its revocations.
2. The coordinator is SIGKILLed while the group reconciles (a member just joined): the group
   carries on under the new coordinator from the records in ``__consumer_offsets`` (the member
   epochs survive: no member is fenced into losing its partitions), and at-least-once holds.
3. Bad heartbeats from a raw client: a stale member epoch is FENCED_MEMBER_EPOCH, an unknown
   member UNKNOWN_MEMBER_ID, a join without subscription INVALID_REQUEST, and none of them
   disturbs the running members.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from mafka.group.offsets_records import offsets_partition_for
from tests.harness.chaos import Chaos, ContinuousProducer, create_topic
from tests.harness.cluster import ClusterFactory, LocalCluster
from tests.harness.group_clients import Group, Member, wait_until
from tests.integration.test_groups import check_at_least_once, read_committed

pytestmark = pytest.mark.integration

PARTITIONS = 6
SESSION_TIMEOUT_S = 6.0
SETTINGS = {
    "zookeeper.session.timeout.ms": "6000",
    "default.replication.factor": "3",
    "offsets.topic.replication.factor": "3",
    "auto.leader.rebalance.enable": "false",
    "replica.lag.time.max.ms": "4000",
    "group.initial.rebalance.delay.ms": "300",
    "group.consumer.min.session.timeout.ms": "6000",
    "group.consumer.session.timeout.ms": "6000",
    "group.consumer.min.heartbeat.interval.ms": "500",
    "group.consumer.heartbeat.interval.ms": "1000",
}


@pytest.fixture(scope="module")
def cluster(cluster_factory: ClusterFactory) -> Iterator[LocalCluster]:
    with cluster_factory.own(name="kip848", settings=SETTINGS) as c:
        yield c


@pytest.fixture
def groups(tmp_path: Path) -> Iterator:
    made: list[Group] = []

    def make(cluster: LocalCluster, topic: str, protocol: str = "consumer", partitions: int = PARTITIONS,
             **options: object) -> Group:
        group = Group("confluent", cluster.bootstrap, f"g-{uuid.uuid4().hex[:8]}", topic, partitions, tmp_path,
                      group_protocol=protocol, **options)
        made.append(group)
        return group

    yield make
    for g in made:
        g.close()


def covered(group: Group, members: list[Member]) -> dict[str, list[int]] | None:
    """The members' assignments if each holds a nonempty set, the sets are disjoint, cover every
    partition and differ in size by at most one (KIP-848 members at different epochs: no
    generation is compared)."""
    out = {}
    for m in members:
        current = m.assignment()
        if not current:
            return None
        out[m.name] = sorted(current)
    held = sorted(p for ps in out.values() for p in ps)
    sizes = [len(ps) for ps in out.values()]
    if held != list(range(PARTITIONS)) or max(sizes) - min(sizes) > 1:
        return None
    return out


def wait_covered(group: Group, members: list[Member], timeout: float) -> dict[str, list[int]]:
    return wait_until(lambda: covered(group, members), timeout,
                      lambda: f"no balanced assignment over {[m.name for m in members]}: "
                              f"{group.assignments(members)}\n{group.explain()}")


def revoked_but_kept(members: list[Member], before: dict[str, list[int]], after: dict[str, list[int]],
                     since: float) -> dict[str, list[int]]:
    """Partitions a member held before and after a change but was asked to revoke in between."""
    out = {}
    for m in members:
        kept = set(before[m.name]) & set(after[m.name])
        hit = sorted({p for e in m.snapshot(after=since) if e["event"] in ("revoked", "lost")
                      for p in e["partitions"]} & kept)
        if hit:
            out[m.name] = hit
    return out


def commits_never_go_back(group: Group) -> None:
    last: dict[int, int] = {}
    for t, p, o, name in group.committed():
        assert o >= last.get(p, -1), f"partition {p}: {name} committed {o} after {last[p]} (t={t:.3f})"
        last[p] = o


def describe(bootstrap: str, group_id: str) -> object:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    return admin.describe_consumer_groups([group_id], request_timeout=15)[group_id].result(timeout=20)


class TestConsumerProtocol:
    def test_members_that_keep_partitions_never_stop_and_a_killed_members_move(self, cluster, groups):
        topic = create_topic(cluster, partitions=PARTITIONS, rf=3)
        g = groups(cluster, topic)
        with ContinuousProducer(cluster.bootstrap, topic, partitions=PARTITIONS, rate=60) as producer:
            producer.wait_acks(12, 30)
            a, b, c = (g.add(name) for name in "abc")
            three = wait_covered(g, [a, b, c], 45)
            assert sorted(len(ps) for ps in three.values()) == [2, 2, 2], three
            for m in (a, b, c):
                m.wait_event("consumed", 30)

            d = g.add("d")
            four = wait_covered(g, [a, b, c, d], 30)
            assert sorted(len(ps) for ps in four.values()) == [1, 1, 2, 2], four
            stray = revoked_but_kept([a, b, c], three, four, d.spawned_at)
            assert not stray, f"members asked to revoke partitions they kept: {stray}\n{g.explain()}"

            description = describe(cluster.bootstrap, g.group)
            assert str(description.type).endswith("CONSUMER"), description.type
            assert len(description.members) == 4

            for m in (a, b, c, d):
                m.wait_event("consumed", 30, after=d.spawned_at)
            victim = max((a, b, c, d), key=lambda m: len(four[m.name]))
            survivors = [m for m in (a, b, c, d) if m is not victim]
            killed = victim.kill()
            after_kill = wait_until(
                lambda: (lambda cov: cov if cov and sorted(map(len, cov.values())) == [2, 2, 2] else None)(
                    covered(g, survivors)),
                SESSION_TIMEOUT_S + 20, lambda: f"survivors never took over: {g.assignments(survivors)}\n{g.explain()}")
            took = time.monotonic() - killed
            stray = revoked_but_kept(survivors, {m.name: four[m.name] for m in survivors}, after_kill, killed)
            assert not stray, f"survivors asked to revoke partitions they kept: {stray}\n{g.explain()}"
            producer.wait_acks(30, 30, after=time.monotonic())
        print(f"  consumer protocol: SIGKILL of {victim.name} {four[victim.name]}: partitions moved within {took:.1f} s")
        ends = check_at_least_once(g, producer)
        commits_never_go_back(g)
        wait_until(lambda: read_committed(cluster.bootstrap, g.group, topic) == ends, 30,
                   lambda: f"committed {read_committed(cluster.bootstrap, g.group, topic)} != ends {ends}")
        for m in survivors:
            assert m.stop() == 0, f"{m} did not exit cleanly\n{m.tail()}"

    def test_negative_control_the_eager_classic_protocol_revokes_what_members_keep(self, cluster, groups):
        # Two partitions, range: the first member holds both, and whichever position the second
        # member takes, the first keeps one of them — which the eager protocol revokes anyway.
        topic = create_topic(cluster, partitions=2, rf=3)
        g = groups(cluster, topic, protocol="classic", partitions=2, assignor="range")
        a = g.add("a")
        one = g.wait_balanced(timeout=45)
        b = g.add("b")
        two = g.wait_balanced(timeout=30, after=b.spawned_at)
        stray = revoked_but_kept([a], one, two, b.spawned_at)
        assert stray, f"the check saw no revocation of kept partitions in an eager group: {one} -> {two}"

    def test_coordinator_sigkill_mid_reconciliation_resumes_the_group(self, cluster, groups):
        topic = create_topic(cluster, partitions=PARTITIONS, rf=3)
        g = groups(cluster, topic)
        chaos = Chaos(cluster)
        try:
            with ContinuousProducer(cluster.bootstrap, topic, partitions=PARTITIONS, rate=60) as producer:
                producer.wait_acks(12, 30)
                a, b = g.add("a"), g.add("b")
                wait_covered(g, [a, b], 45)
                coordinator = chaos.wait_leader("__consumer_offsets", offsets_partition_for(g.group), timeout=30)
                c = g.add("c")
                c.wait_event("started", 15)
                time.sleep(0.5)  # c's join is in flight: the group is reconciling when its coordinator dies
                chaos.kill(coordinator)
                three = wait_covered(g, [a, b, c], 60)
                assert sorted(len(ps) for ps in three.values()) == [2, 2, 2], three
                for m in (a, b, c):
                    m.wait_event("consumed", 30, after=time.monotonic())
                producer.wait_acks(30, 30, after=time.monotonic())
                chaos.restart(coordinator)
            check_at_least_once(g, producer)
            commits_never_go_back(g)
        finally:
            chaos.close()

    def test_bad_heartbeats_get_kafkas_errors_and_disturb_nobody(self, cluster, groups):
        from mafka.errors import ErrorCode
        from tests.harness.raw_client import BlockingClient

        topic = create_topic(cluster, partitions=PARTITIONS, rf=3)
        g = groups(cluster, topic)
        a, b = g.add("a"), g.add("b")
        before = wait_covered(g, [a, b], 45)
        coordinator = Chaos(cluster)
        try:
            leader = coordinator.wait_leader("__consumer_offsets", offsets_partition_for(g.group), timeout=30)
        finally:
            coordinator.close()

        def heartbeat(client: BlockingClient, **fields: object) -> object:
            body = {"group_id": g.group, "member_id": "", "member_epoch": 0, "instance_id": None, "rack_id": None,
                    "rebalance_timeout_ms": -1, "subscribed_topic_names": None, "subscribed_topic_regex": None,
                    "server_assignor": None, "topic_partitions": None, **fields}
            return client.call(68, 1, body, broker_id=leader)

        probe_started = time.monotonic()
        with BlockingClient(cluster.bootstrap, client_id="bad-heartbeats") as client:
            member = uuid.uuid4().hex[:22]
            joined = heartbeat(client, member_id=member, member_epoch=0, rebalance_timeout_ms=30000,
                               subscribed_topic_names=[topic], topic_partitions=[])
            assert joined.error_code == ErrorCode.NONE, joined
            epoch = joined.member_epoch
            assert epoch > 0
            stale = heartbeat(client, member_id=member, member_epoch=epoch + 5)
            assert stale.error_code == ErrorCode.FENCED_MEMBER_EPOCH, stale
            unknown = heartbeat(client, member_id=uuid.uuid4().hex[:22], member_epoch=3)
            assert unknown.error_code == ErrorCode.UNKNOWN_MEMBER_ID, unknown
            no_subscription = heartbeat(client, member_id=uuid.uuid4().hex[:22], member_epoch=0,
                                        rebalance_timeout_ms=30000, topic_partitions=[])
            assert no_subscription.error_code == ErrorCode.INVALID_REQUEST, no_subscription
            assert no_subscription.error_message, no_subscription
            # the fenced prober leaves for good; the real members rebalance back to all partitions
            heartbeat(client, member_id=member, member_epoch=-1)
        after = wait_covered(g, [a, b], 30)
        assert sorted(map(len, after.values())) == sorted(map(len, before.values()))
        for m in (a, b):
            assert not [e for e in m.snapshot("error", after=probe_started)], m.tail()

    def test_a_static_member_restarted_within_its_session_takes_its_partitions_back_alone(self, cluster, groups):
        topic = create_topic(cluster, partitions=PARTITIONS, rf=3)
        g = groups(cluster, topic)
        a, b = g.add("a", instance_id="static-a"), g.add("b", instance_id="static-b")
        before = wait_covered(g, [a, b], 45)
        stopped = time.monotonic()
        assert a.stop() == 0, a.tail()  # a static member leaves with epoch -2: it keeps its partitions
        a2 = g.add("a", instance_id="static-a")
        wait_until(lambda: sorted(a2.assignment() or []) == before["a"], 30,
                   lambda: f"the restarted static member holds {a2.assignment()}, before {before['a']}\n{g.explain()}")
        traces = [e for e in b.snapshot(after=stopped) if e["event"] in ("assigned", "revoked", "lost")]
        assert not traces, f"b saw the static member's restart: {traces}\n{b.tail()}"

    def test_a_regex_subscription_follows_new_matching_topics(self, cluster):
        from confluent_kafka import Consumer

        prefix = f"rx{uuid.uuid4().hex[:6]}"
        first = create_topic(cluster, partitions=2, rf=3, name=f"{prefix}-one")
        create_topic(cluster, partitions=2, rf=3, name=f"other{prefix}")
        consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"g-{prefix}",
                             "group.protocol": "consumer", "topic.metadata.refresh.interval.ms": 1000})
        try:
            consumer.subscribe([f"^{prefix}-.*"])

            def assigned() -> set[tuple[str, int]]:
                consumer.poll(0.2)
                return {(tp.topic, tp.partition) for tp in consumer.assignment()}

            wait_until(lambda: assigned() == {(first, 0), (first, 1)}, 45,
                       lambda: f"assignment {assigned()}, expected {first}'s two partitions only")
            second = create_topic(cluster, partitions=1, rf=3, name=f"{prefix}-two")
            wait_until(lambda: assigned() == {(first, 0), (first, 1), (second, 0)}, 45,
                       lambda: f"assignment {assigned()} after {second} was created")
        finally:
            consumer.close()
