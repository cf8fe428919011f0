"""mafka.controller.leader_election: ElectLeaders, /admin/preferred_replica_election, auto rebalance.

Runs on the fake cluster of :mod:`tests.unit.controller.cluster` (MemoryStore
sessions, fake brokers, a ``Clock``).  Leaders' ISR changes are staged with
:func:`~tests.unit.controller.cluster.set_isr`, as the broker writes them.
"""

from __future__ import annotations

from mafka.controller.leader_election import (
    AUTO_REBALANCE_PASS,
    ElectionType,
    preferred_replica_imbalance,
)
from mafka.coordination.znodes import PreferredReplicaElectionZNode
from mafka.errors import ErrorCode

from .cluster import UMR, Cluster, fire, lai_states, result, set_isr

PREFERRED, UNCLEAN = ElectionType.PREFERRED, ElectionType.UNCLEAN
NO_AUTO = {"auto.leader.rebalance.enable": "false"}


def moved_off(cluster: Cluster, b: int) -> None:
    """*b* dies and comes back; its partitions' leadership stays on the others, ISRs re-expanded."""
    cluster.kill(b)
    cluster.start_broker(b)
    for (topic, p), state in sorted(cluster.active.context.leadership.items()):
        replicas = cluster.active.context.partition_replicas((topic, p))
        if b in replicas and b not in state.isr:
            set_isr(cluster, topic, p, (*state.isr, b))


# --------------------------------------------------------------------------- ElectLeaders PREFERRED


def test_preferred_election_moves_leadership_back_and_tells_every_replica() -> None:
    cluster = Cluster((1, 2, 3), config=NO_AUTO)
    c = cluster.active
    x, y = cluster.others()
    cluster.create("t", {0: [x, y], 1: [y, x]})
    moved_off(cluster, x)
    before = cluster.state("t", 0)
    assert before.leader == y and set(before.isr) == {x, y}
    marks = cluster.marks()

    out = fire(cluster, c.elect_leaders(PREFERRED, [("t", 0), ("t", 1)]))

    assert out == {
        ("t", 0): (ErrorCode.NONE, None),
        ("t", 1): (
            ErrorCode.ELECTION_NOT_NEEDED,
            "Leader election not needed for topic partition.",
        ),
    }
    after = cluster.state("t", 0)
    assert after.leader == x
    assert after.isr == before.isr, "the Preferred strategy keeps the ISR"
    assert after.leader_epoch == before.leader_epoch + 1
    assert after.controller_epoch == c.epoch
    for b in (x, y):  # LeaderAndIsr to every assigned replica
        (topic, ps), *_ = [
            (t, ps) for t, ps in lai_states(cluster.brokers[b], marks[b]) if ps.partition_index == 0
        ]
        assert (ps.leader, ps.leader_epoch) == (x, after.leader_epoch)
    for b, fb in cluster.brokers.items():  # UpdateMetadata to every broker
        assert fb.requests(UMR, since=marks[b])
        assert fb.metadata.partition("t", 0).leader == x
    assert c.stats.preferred_leader_elections == 1


def test_preferred_election_errors() -> None:
    cluster = Cluster((1, 2, 3), config=NO_AUTO)
    c = cluster.active
    x, y = cluster.others()
    cluster.create("t", {0: [x, y], 1: [x, y]})
    cluster.kill(x)
    cluster.start_broker(x)
    set_isr(cluster, "t", 1, (y, x))  # only partition 1 has x back in its ISR

    out = fire(
        cluster,
        c.elect_leaders(PREFERRED, [("t", 0), ("t", 1), ("t", 7), ("nope", 0)]),
    )
    code, message = out[("t", 0)]
    assert code == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
    assert message == "Failed to elect leader for partition t-0 under strategy preferred"
    assert cluster.state("t", 0).leader == y, "nothing written"
    assert out[("t", 1)] == (ErrorCode.NONE, None)
    assert out[("t", 7)] == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.")
    assert out[("nope", 0)][0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

    # A dead preferred replica is not available either.
    cluster.create("u", {0: [y, x]})
    cluster.kill(y)
    assert cluster.state("u", 0).leader == x
    out = fire(cluster, c.elect_leaders(PREFERRED, [("u", 0)]))
    assert out[("u", 0)][0] == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE

    # Not the controller.
    other = cluster.controllers[x]
    out = fire(cluster, other.elect_leaders(PREFERRED, [("t", 0)]))
    assert out == {("t", 0): (ErrorCode.NOT_CONTROLLER, ErrorCode.NOT_CONTROLLER.description)}
    assert fire(cluster, other.elect_leaders(PREFERRED, None)) == {}


def test_null_partitions_elect_every_partition() -> None:
    cluster = Cluster((1, 2, 3), config=NO_AUTO)
    c = cluster.active
    x, y = cluster.others()
    cluster.create("a", {0: [x, y], 1: [y, x]})
    cluster.create("b", {0: [x, c.broker_id]})
    moved_off(cluster, x)
    out = fire(cluster, c.elect_leaders(PREFERRED, None))
    assert out[("a", 0)] == (ErrorCode.NONE, None)
    assert out[("b", 0)] == (ErrorCode.NONE, None)
    assert out[("a", 1)][0] == ErrorCode.ELECTION_NOT_NEEDED
    assert {cluster.state("a", 0).leader, cluster.state("b", 0).leader} == {x}


def test_topic_being_deleted_is_refused() -> None:
    cluster = Cluster((1, 2, 3), config=NO_AUTO)
    c = cluster.active
    x, y = cluster.others()
    cluster.create("t", {0: [x, y]})
    cluster.kill(y)  # a dead replica halts the deletion: the topic stays queued
    fire(cluster, cluster.admin.mark_topic_for_deletion("t"))
    assert c.context.is_topic_queued_for_deletion("t")
    out = fire(cluster, c.elect_leaders(PREFERRED, [("t", 0)]))
    assert out[("t", 0)] == (ErrorCode.INVALID_TOPIC_EXCEPTION, "The topic is being deleted")


# --------------------------------------------------------------------------- UNCLEAN


def test_unclean_election_elects_an_out_of_sync_replica_and_counts_it() -> None:
    cluster = Cluster((1, 2, 3), config=NO_AUTO)
    c = cluster.active
    x, y = cluster.others()
    cluster.create("t", {0: [x, y], 1: [y, x], 2: [x]})
    set_isr(cluster, "t", 0, (x,))  # y fell out of the ISR
    cluster.kill(x)
    assert cluster.state("t", 0).leader == -1, "unclean election is off by default"
    assert c.stats.unclean_leader_elections == 0

    out = fire(cluster, c.elect_leaders(UNCLEAN, [("t", 0), ("t", 1), ("t", 2)]))

    assert out[("t", 0)] == (ErrorCode.NONE, None)
    assert out[("t", 1)][0] == ErrorCode.ELECTION_NOT_NEEDED, "its leader is live"
    assert out[("t", 2)][0] == ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, "no live replica"
    state = cluster.state("t", 0)
    assert (state.leader, state.isr) == (y, (y,))
    assert c.stats.unclean_leader_elections == 1
    assert cluster.brokers[y].partitions[("t", 0)].leader == y


def test_offline_unclean_election_by_topic_config_is_counted() -> None:
    cluster = Cluster((1, 2, 3), config=NO_AUTO)
    c = cluster.active
    x, y = cluster.others()
    cluster.create("dirty", {0: [x, y]}, {"unclean.leader.election.enable": "true"})
    set_isr(cluster, "dirty", 0, (x,))
    cluster.kill(x)
    assert cluster.state("dirty", 0).leader == y
    assert c.stats.unclean_leader_elections == 1


def test_unclean_broker_default_applies_without_topic_override() -> None:
    cluster = Cluster((1, 2, 3), config={**NO_AUTO, "unclean.leader.election.enable": "true"})
    c = cluster.active
    x, y = cluster.others()
    cluster.create("t", {0: [x, y]})
    set_isr(cluster, "t", 0, (x,))
    cluster.kill(x)
    assert cluster.state("t", 0).leader == y
    assert c.stats.unclean_leader_elections == 1


# --------------------------------------------------------------------------- /admin/preferred_replica_election


def test_preferred_replica_election_znode_is_processed_and_deleted() -> None:
    cluster = Cluster((1, 2, 3), config=NO_AUTO)
    x, y = cluster.others()
    cluster.create("t", {0: [x, y], 1: [x, y]})
    moved_off(cluster, x)
    fire(cluster, cluster.admin.create_preferred_replica_election([("t", 0), ("missing", 3)]))
    cluster.settle()
    assert cluster.state("t", 0).leader == x
    assert cluster.state("t", 1).leader == y, "only the listed partitions"
    assert result(cluster.admin.store.exists(PreferredReplicaElectionZNode.PATH)) is None

    # Deleted even when nothing needed electing; and a new request is seen again.
    fire(cluster, cluster.admin.create_preferred_replica_election([("t", 0)]))
    cluster.settle()
    assert result(cluster.admin.store.exists(PreferredReplicaElectionZNode.PATH)) is None
    fire(cluster, cluster.admin.create_preferred_replica_election([("t", 1)]))
    cluster.settle()
    assert cluster.state("t", 1).leader == x


def test_pending_preferred_replica_election_runs_at_failover() -> None:
    cluster = Cluster((1, 2, 3), config=NO_AUTO)
    old = cluster.active
    x, y = cluster.others()
    cluster.create("t", {0: [x, y]})
    moved_off(cluster, x)
    old_store = cluster.stores[old.broker_id]
    # Written while the controller hears nothing: the next controller must act on it.
    for w in list(old.failover._watches):
        w.cancel()
    old.failover._watches = []
    fire(cluster, cluster.admin.create_preferred_replica_election([("t", 0)]))
    old_store.expire_session(reestablish=False)
    cluster.settle()
    assert cluster.active is not old
    assert cluster.state("t", 0).leader == x
    assert result(cluster.admin.store.exists(PreferredReplicaElectionZNode.PATH)) is None


# --------------------------------------------------------------------------- auto rebalance


def test_imbalance_ratio_as_kafka_computes_it() -> None:
    assignments = {
        ("t", 0): (1, 2),
        ("t", 1): (1, 2),
        ("t", 2): (1, 3),
        ("t", 3): (2, 1),
        ("u", 0): (3,),
    }
    leaders = {("t", 0): 2, ("t", 1): 1, ("t", 2): 3, ("t", 3): 2}  # u-0 has no state
    got = preferred_replica_imbalance(assignments, leaders)
    assert got[1] == (2 / 3, [("t", 0), ("t", 2)])
    assert got[2] == (0.0, [])
    assert got[3] == (0.0, []), "a partition without a leader only counts in the denominator"


def rebalance_cluster(percentage: int) -> tuple[Cluster, int, int]:
    config = {"leader.imbalance.per.broker.percentage": str(percentage)}
    cluster = Cluster((1, 2, 3), config=config)
    x, y = cluster.others()
    cluster.create("t", {p: [x, y] for p in range(10)})
    moved_off(cluster, x)
    return cluster, x, y


def leaders(cluster: Cluster) -> list[int]:
    return [cluster.state("t", p).leader for p in range(10)]


def test_auto_rebalance_runs_5s_after_failover_then_every_interval() -> None:
    cluster, x, y = rebalance_cluster(10)
    assert leaders(cluster) == [y] * 10
    cluster.clock.advance(5)
    cluster.settle()
    assert leaders(cluster) == [x] * 10
    assert cluster.active.stats.preferred_leader_elections == 10

    moved_off(cluster, x)
    cluster.clock.advance(299)
    cluster.settle()
    assert leaders(cluster) == [y] * 10, "the next check is 300 s after the first"
    cluster.clock.advance(1)
    cluster.settle()
    assert leaders(cluster) == [x] * 10


def test_a_failed_auto_rebalance_check_is_counted_and_the_next_one_still_comes_an_interval_later() -> None:
    cluster, x, y = rebalance_cluster(10)
    c = cluster.active
    check = c.leader_elections._check_and_trigger_auto_leader_rebalance
    broken = [True]

    async def failing_check() -> None:
        if broken[0]:
            raise RuntimeError("a partition state the check did not expect")
        await check()

    c.leader_elections._check_and_trigger_auto_leader_rebalance = failing_check
    cluster.clock.advance(5)
    cluster.settle()
    assert leaders(cluster) == [y] * 10
    assert c.background.failure_count(AUTO_REBALANCE_PASS) == 1
    assert c.events.idle, "the failed event did not block the queue"
    broken[0] = False
    cluster.clock.advance(299)
    cluster.settle()
    assert leaders(cluster) == [y] * 10
    cluster.clock.advance(1)
    cluster.settle()
    assert leaders(cluster) == [x] * 10, "checked again 300 s after the failed check"
    assert c.background.failure_count(AUTO_REBALANCE_PASS) == 1


def test_auto_rebalance_threshold_is_strictly_greater_than_the_percentage() -> None:
    cluster, x, y = rebalance_cluster(10)
    c = cluster.active
    # Preferred-elect all but one: 1/10 = 10 % is not above 10 %.
    fire(cluster, c.elect_leaders(PREFERRED, [("t", p) for p in range(1, 10)]))
    assert leaders(cluster) == [y] + [x] * 9
    cluster.clock.advance(5)
    cluster.settle()
    assert leaders(cluster) == [y] + [x] * 9
    # Two of ten (20 %) are.
    cluster, x, y = rebalance_cluster(10)
    fire(cluster, cluster.active.elect_leaders(PREFERRED, [("t", p) for p in range(2, 10)]))
    assert leaders(cluster) == [y, y] + [x] * 8
    cluster.clock.advance(5)
    cluster.settle()
    assert leaders(cluster) == [x] * 10


def test_auto_rebalance_skips_partitions_whose_preferred_replica_is_not_in_the_isr() -> None:
    cluster = Cluster((1, 2, 3))
    x, y = cluster.others()
    cluster.create("t", {0: [x, y], 1: [x, y]})
    cluster.kill(x)
    cluster.start_broker(x)
    set_isr(cluster, "t", 1, (y, x))
    cluster.clock.advance(5)
    cluster.settle()
    assert cluster.state("t", 0).leader == y
    assert cluster.state("t", 1).leader == x


def test_auto_rebalance_disabled_and_stopped_on_resignation() -> None:
    cluster = Cluster((1, 2, 3), config=NO_AUTO)
    x, y = cluster.others()
    cluster.create("t", {0: [x, y]})
    moved_off(cluster, x)
    cluster.clock.advance(3600)
    cluster.settle()
    assert cluster.state("t", 0).leader == y
    assert cluster.active.leader_elections.auto_rebalance_call is None

    enabled = Cluster((1, 2, 3))
    old = enabled.active
    assert old.leader_elections.auto_rebalance_call is not None and old.leader_elections.auto_rebalance_call.active()
    enabled.stores[old.broker_id].expire_session(reestablish=False)
    enabled.settle()
    assert old.leader_elections.auto_rebalance_call is None
    assert enabled.active.leader_elections.auto_rebalance_call.active()
